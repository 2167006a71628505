package vm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// debianKeyring is the Debian archive keyring the host's apt already
// trusts (debian-archive-keyring); backports are signed with it.
const debianKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

// aptOptions returns the apt options that make apt-get and apt-cache read
// a series' extra suite from a private sources list and private package
// lists under cacheDir/apt/<suite>, leaving the host's apt configuration
// and lists alone; nil for a series the host's sources carry.
func aptOptions(cacheDir string, s *series) ([]string, error) {
	if s.suite == "" {
		return nil, nil
	}
	dir := filepath.Join(cacheDir, "apt", s.suite)
	for _, d := range []string{"lists/partial", "cache/archives/partial", "sources.list.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("apt sources for %s: %w", s.suite, err)
		}
	}
	opts := ""
	if _, err := os.Stat(debianKeyring); err == nil {
		opts = "[signed-by=" + debianKeyring + "] "
	}
	line := fmt.Sprintf("deb %s%s %s main\n", opts, debianMirror(), s.suite)
	list := filepath.Join(dir, "sources.list")
	if old, err := os.ReadFile(list); err != nil || string(old) != line {
		if err := os.WriteFile(list, []byte(line), 0o644); err != nil {
			return nil, fmt.Errorf("apt sources for %s: %w", s.suite, err)
		}
	}
	// An empty dpkg status: with the host's, a kernel installed on the
	// host (a linux-headers package pulls its image in) is listed by this
	// source too, which then cannot download it.
	status := filepath.Join(dir, "status")
	if err := os.WriteFile(status, nil, 0o644); err != nil {
		return nil, fmt.Errorf("apt sources for %s: %w", s.suite, err)
	}
	return []string{
		"-o", "Dir::State::status=" + status,
		"-o", "Dir::Etc::SourceList=" + list,
		"-o", "Dir::Etc::SourceParts=" + filepath.Join(dir, "sources.list.d"),
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		// The download lands in a root-owned cache directory _apt cannot
		// write; say so instead of letting apt warn about it each time.
		"-o", "APT::Sandbox::User=root",
	}, nil
}

// aptSources returns the apt option sets to ask for a series' packages:
// the host's own sources and lists (nil options), after the private list
// of aptOptions for a series with an extra suite. Debian ships a series'
// kernels from more than one suite: 6.12 from bookworm-backports, and
// newer 6.12 releases from bookworm-security too, which a Debian 12
// host's own sources carry.
func aptSources(cacheDir string, s *series) ([][]string, error) {
	opts, err := aptOptions(cacheDir, s)
	if err != nil || opts == nil {
		return [][]string{nil}, err
	}
	return [][]string{opts, nil}, nil
}

// aptUpdate refreshes the package lists of each source; it fails only
// when none could be refreshed (offline), since one source's lists may
// be enough.
func aptUpdate(ctx context.Context, srcs [][]string) error {
	var errs []error
	for _, opts := range srcs {
		args := append(append([]string{}, opts...), "update", "-qq")
		if out, err := exec.CommandContext(ctx, "apt-get", args...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("apt-get update: %w: %s", err, lastLine(string(out))))
		}
	}
	if len(errs) < len(srcs) {
		return nil
	}
	return errors.Join(errs...)
}

// debianMirror is the Debian archive URI of the host's apt sources (the
// one serving bookworm), else deb.debian.org.
func debianMirror() string {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range files {
		if u := mirrorFromDeb822(f); u != "" {
			return u
		}
	}
	files, _ = filepath.Glob("/etc/apt/sources.list.d/*.list")
	for _, f := range append([]string{"/etc/apt/sources.list"}, files...) {
		if u := mirrorFromList(f); u != "" {
			return u
		}
	}
	return "http://deb.debian.org/debian"
}

// mirrorFromDeb822 returns the first URI of a stanza whose Suites include
// bookworm.
func mirrorFromDeb822(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, stanza := range strings.Split(string(b), "\n\n") {
		fields := map[string]string{}
		for _, l := range strings.Split(stanza, "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		if hasWord(fields["suites"], "bookworm") && hasWord(fields["types"], "deb") {
			if u := strings.Fields(fields["uris"]); len(u) > 0 {
				return strings.TrimRight(u[0], "/")
			}
		}
	}
	return ""
}

// mirrorFromList returns the URI of the first one-line "deb URI bookworm"
// entry.
func mirrorFromList(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) < 3 || w[0] != "deb" {
			continue
		}
		w = w[1:]
		if strings.HasPrefix(w[0], "[") { // [options]
			for len(w) > 0 && !strings.HasSuffix(w[0], "]") {
				w = w[1:]
			}
			if len(w) > 0 {
				w = w[1:]
			}
		}
		if len(w) >= 2 && w[1] == "bookworm" {
			return strings.TrimRight(w[0], "/")
		}
	}
	return ""
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}
