package layout

import (
	"go/ast"
	"go/token"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper/backends"
)

// module is the module's import path.
const module = "github.com/free5gc/gtpqos"

// consumerDirs are the packages that reach backends only through the
// shaper.Backend seam (package shaper/backends opens them by name).
var consumerDirs = []string{"watch/", "cmd/"}

// seamPackages are the packages under shaper/ a consumer may import:
// the model, the registry and the device lock. Anything else there is a
// backend or a piece of one (shaper/htb, shaper/classify/..., a new one).
var seamPackages = map[string]bool{module + "/shaper": true, module + "/shaper/backends": true, module + "/shaper/devlock": true}

// backendWords are the names of backends, classifier kinds and leaf kinds
// a consumer's code must not spell: the registry's backends and the HTB
// backend's kinds.
func backendWords() []string {
	return append(backends.Names(), "fw", "bpf", "gtpu", "fq_codel", "fifo", "cls_fw", "cls_bpf")
}

// kindIdents are the model's identifiers that name classifier or leaf
// kinds: a consumer that uses one picks a classifier.
var kindIdents = regexp.MustCompile(`^(Kind[A-Z]\w*|Leaf[A-Z]\w*|ClassifierKind|ParseClassifierKind|ParseLeafKind|LegacyKnobsBackend)$`)

// isConsumer reports whether the file at rel belongs to a consumer.
func isConsumer(rel string) bool {
	for _, d := range consumerDirs {
		if strings.HasPrefix(rel, d) {
			return true
		}
	}
	return false
}

// TestConsumersImportNoBackend fails where watch/ or cmd/ imports a
// backend package: they open backends through package shaper/backends
// only, so a second backend needs no change there.
func TestConsumersImportNoBackend(t *testing.T) {
	eachProductFile(t, func(rel string, fset *token.FileSet, f *ast.File) {
		if !isConsumer(rel) {
			return
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(path, module+"/shaper/") && !seamPackages[path] {
				t.Errorf("%s imports %s: open backends through shaper/backends instead", rel, path)
			}
		}
	})
}

// TestConsumersNameNoBackendOrKind fails where watch/ or cmd/ code names a
// backend, a classifier kind or a leaf kind, in a string or through the
// model's kind identifiers: which classifier binds packets is the
// backend's choice (backends.Options says what the caller knows).
// Comments are free to explain.
func TestConsumersNameNoBackendOrKind(t *testing.T) {
	words := regexp.MustCompile(`(?i)\b(` + strings.Join(backendWords(), "|") + `)\b`)
	eachProductFile(t, func(rel string, fset *token.FileSet, f *ast.File) {
		if !isConsumer(rel) {
			return
		}
		shaperName := importName(f, module+"/shaper")
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BasicLit:
				if x.Kind != token.STRING {
					return true
				}
				if w := words.FindString(x.Value); w != "" {
					t.Errorf("%s:%d: %q names a backend or kind in %s: ask shaper/backends (Choices, Check)", rel, fset.Position(x.Pos()).Line, w, x.Value)
				}
			case *ast.SelectorExpr:
				if pkg, ok := x.X.(*ast.Ident); ok && shaperName != "" && pkg.Name == shaperName && kindIdents.MatchString(x.Sel.Name) {
					t.Errorf("%s:%d: shaper.%s picks a classifier or leaf kind: leave it to the backend", rel, fset.Position(x.Pos()).Line, x.Sel.Name)
				}
			}
			return true
		})
	})
}

// TestModelHasNoBackendImports fails if the model depends on a backend
// or the registry: backends depend on the model, never the other way.
func TestModelHasNoBackendImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command on PATH")
	}
	for _, pkg := range modelPackages {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg)
		cmd.Dir = root(t)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, module+"/shaper/") {
				t.Errorf("%s depends on %s: the model must not know its backends", pkg, dep)
			}
		}
	}
}
