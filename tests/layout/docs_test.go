package layout

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The README is the front door: an operator finds how to run gtpqos on a
// UPF without scrolling, and the rest lives in docs/.
const (
	readmeMaxLines  = 200
	runHeading      = "## Run it on your free5GC UPF"
	runHeadingLines = 60
)

// TestReadmeIsAFrontDoor fails if README.md grows past readmeMaxLines or
// the install section is not within its first runHeadingLines lines.
func TestReadmeIsAFrontDoor(t *testing.T) {
	lines := strings.Split(readFile(t, filepath.Join(root(t), "README.md")), "\n")
	if n := len(lines); n >= readmeMaxLines {
		t.Errorf("README.md has %d lines, want under %d: move detail to docs/", n, readmeMaxLines)
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == runHeading {
			if i+1 > runHeadingLines {
				t.Errorf("README.md: %q is on line %d, want within the first %d", runHeading, i+1, runHeadingLines)
			}
			return
		}
	}
	t.Errorf("README.md has no heading %q", runHeading)
}

// TestDocLinksResolve fails if a relative link or image in a Markdown file
// of the repository names a file that does not exist, or an anchor that no
// heading of the linked Markdown file makes (GitHub's heading ids).
func TestDocLinksResolve(t *testing.T) {
	top := root(t)
	files := markdownFiles(t, top)
	if len(files) == 0 {
		t.Fatal("no Markdown files found")
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := headingIDs(readFile(t, path))
		anchors[path] = a
		return a
	}
	for _, md := range files {
		rel, _ := filepath.Rel(top, md)
		for _, link := range relativeLinks(readFile(t, md)) {
			target, anchor, _ := strings.Cut(link, "#")
			path := md
			if target != "" {
				path = filepath.Join(filepath.Dir(md), filepath.FromSlash(target))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %s does not exist", rel, link, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
				t.Errorf("%s: link %q: no heading in %s makes the anchor #%s", rel, link, filepath.Base(path), anchor)
			}
		}
	}
}

// TestReadmeParagraphsNotInDocs fails if a paragraph of README.md appears
// word for word in docs/: each thing is said in one place and linked from
// the other.
func TestReadmeParagraphsNotInDocs(t *testing.T) {
	top := root(t)
	inDocs := map[string]string{}
	docs, err := filepath.Glob(filepath.Join(top, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v (%d files)", err, len(docs))
	}
	for _, d := range docs {
		for _, p := range paragraphs(readFile(t, d)) {
			inDocs[p] = filepath.Base(d)
		}
	}
	for _, p := range paragraphs(readFile(t, filepath.Join(top, "README.md"))) {
		if d, ok := inDocs[p]; ok {
			t.Errorf("README.md and docs/%s share the paragraph %q: keep one and link to it", d, p)
		}
	}
}

// markdownFiles lists the repository's Markdown files, hidden directories
// left out.
func markdownFiles(t *testing.T, top string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != top && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", top, err)
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return string(b)
}

var (
	linkRE       = regexp.MustCompile(`!?\[[^\]]*\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)`)
	codeSpanRE   = regexp.MustCompile("`[^`\n]*`")
	schemeRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	whitespaceRE = regexp.MustCompile(`\s+`)
)

// proseLines is the Markdown text outside fenced code blocks, with inline
// code spans kept or dropped.
func proseLines(text string, keepCode bool) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			out = append(out, "")
			continue
		}
		if fenced {
			out = append(out, "")
			continue
		}
		if !keepCode {
			l = codeSpanRE.ReplaceAllString(l, "")
		}
		out = append(out, l)
	}
	return out
}

// relativeLinks returns the targets of the text's links and images that
// point into the repository (no scheme), outside code.
func relativeLinks(text string) []string {
	var out []string
	for _, l := range proseLines(text, true) {
		// A code span may hold link-like text; the link text may hold a code span.
		l = codeSpanRE.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat("x", len(s)) })
		for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
			if !schemeRE.MatchString(m[1]) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// headingIDs are the anchors GitHub gives the text's headings: lower case,
// letters, digits, '-' and '_' kept, spaces to '-', the rest dropped; a
// repeated id gets -1, -2, ...
func headingIDs(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(text, true) {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		id := slug(m[1])
		if n := seen[id]; n > 0 {
			ids[id+"-"+strconv.Itoa(n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// paragraphs are the text's prose paragraphs of at least 80 characters,
// whitespace folded, outside code blocks and tables.
func paragraphs(text string) []string {
	var out, cur []string
	flush := func() {
		p := strings.TrimSpace(whitespaceRE.ReplaceAllString(strings.Join(cur, " "), " "))
		if len(p) >= 80 {
			out = append(out, p)
		}
		cur = cur[:0]
	}
	for _, l := range proseLines(text, true) {
		s := strings.TrimSpace(l)
		if s == "" || strings.HasPrefix(s, "|") || strings.HasPrefix(s, "#") {
			flush()
			continue
		}
		cur = append(cur, s)
	}
	flush()
	return out
}

// repoPathRE is a word that may name a file of the repository: a top-level
// folder, a slash, and more path.
var (
	repoPathRE = regexp.MustCompile(`^(?:\.\.?/)?([A-Za-z0-9_-]+)/[A-Za-z0-9_./-]*$`)
	goSymbolRE = regexp.MustCompile(`\.[A-Z][A-Za-z0-9_*]*$`)
)

// buildOutputs are folders that exist only after a build or a run.
var buildOutputs = map[string]bool{"bin": true, "out": true}

// TestDocPathsExist fails if README.md or a file in docs/ names, in code
// or a command, a path under one of the repository's top-level folders
// that does not exist.
func TestDocPathsExist(t *testing.T) {
	top := root(t)
	docs, _ := filepath.Glob(filepath.Join(top, "docs", "*.md"))
	for _, md := range append([]string{filepath.Join(top, "README.md")}, docs...) {
		rel, _ := filepath.Rel(top, md)
		for _, w := range codeWords(readFile(t, md)) {
			w = goSymbolRE.ReplaceAllString(w, "") // tests/faults.TestFault...: the package
			m := repoPathRE.FindStringSubmatch(w)
			if m == nil || buildOutputs[m[1]] || strings.HasPrefix(w, "/") {
				continue
			}
			// ../x is relative to the document, ./x (a Go package) and x to the top.
			path := filepath.Join(top, filepath.FromSlash(w))
			if strings.HasPrefix(w, "../") {
				path = filepath.Join(filepath.Dir(md), filepath.FromSlash(w))
			} else if fi, err := os.Stat(filepath.Join(top, m[1])); err != nil || !fi.IsDir() {
				continue // not one of the repository's folders
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s names %s, which does not exist", rel, w)
			}
		}
	}
}

// codeWords are the words of the text's code spans and code blocks, with
// trailing punctuation trimmed.
func codeWords(text string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		var spans []string
		if fenced {
			spans = []string{l}
		} else {
			for _, s := range codeSpanRE.FindAllString(l, -1) {
				spans = append(spans, strings.Trim(s, "`"))
			}
		}
		for _, s := range spans {
			for _, w := range strings.Fields(s) {
				out = append(out, strings.TrimRight(w, ".,;:)'\""))
			}
		}
	}
	return out
}
