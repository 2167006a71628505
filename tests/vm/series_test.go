package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPickSeries checks how the kernel series is chosen: Config field,
// then $GTPQOS_VM_KERNEL, then 6.1; a release (a module's vermagic)
// decides, and contradicts only an explicit Config field.
func TestPickSeries(t *testing.T) {
	cases := []struct {
		name, env, release, want, err string
	}{
		{want: "6.1"},
		{env: "6.12", want: "6.12"},
		{name: "6.1", env: "6.12", want: "6.1"},
		{release: "6.12.95+deb12-amd64", want: "6.12"},
		{release: "6.1.0-57-amd64", env: "6.12", want: "6.1"},
		{name: "6.12", release: "6.1.0-57-amd64", err: "is of series 6.1, but Config.KernelSeries is 6.12"},
		{name: "6.6", err: `Config.KernelSeries="6.6": want one of 6.1, 6.12`},
		{env: "612", err: `GTPQOS_VM_KERNEL="612"`},
		{release: "6.18.0-1-amd64", err: "not a Debian 12 kernel"},
		{release: "6.12.95+deb12-amd64-dbg", err: "not a Debian 12 kernel"},
	}
	for _, c := range cases {
		t.Setenv(SeriesEnv, c.env)
		s, err := pickSeries(c.name, c.release)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("pickSeries(%q, %q) with %s=%q: err %v, want one containing %q", c.name, c.release, SeriesEnv, c.env, err, c.err)
			}
		case err != nil:
			t.Errorf("pickSeries(%q, %q) with %s=%q: %v", c.name, c.release, SeriesEnv, c.env, err)
		case s.name != c.want:
			t.Errorf("pickSeries(%q, %q) with %s=%q = %s, want %s", c.name, c.release, SeriesEnv, c.env, s.name, c.want)
		}
	}
}

// TestSeriesPackages checks which apt package names each series takes:
// the signed and -unsigned images, not debug, cloud or rt flavours.
func TestSeriesPackages(t *testing.T) {
	cases := map[string]string{
		"linux-image-6.1.0-57-amd64":                "6.1.0-57-amd64",
		"linux-image-6.1.0-57-amd64-unsigned":       "6.1.0-57-amd64",
		"linux-image-6.12.95+deb12-amd64":           "6.12.95+deb12-amd64",
		"linux-image-6.12.95+deb12-amd64-unsigned":  "6.12.95+deb12-amd64",
		"linux-image-6.12.95+deb12-amd64-dbg":       "",
		"linux-image-6.12.95+deb12-cloud-amd64":     "",
		"linux-image-6.12.95+deb12-rt-amd64":        "",
		"linux-image-6.1.0-57-cloud-amd64":          "",
		"linux-headers-6.12.95+deb12-amd64":         "",
		"linux-image-6.12.95+deb12-amd64-unsigned2": "",
	}
	for pkg, want := range cases {
		got := ""
		for _, s := range allSeries {
			if m := s.pkgRE.FindStringSubmatch(pkg); m != nil {
				got = m[1]
			}
		}
		if got != want {
			t.Errorf("%s: release %q, want %q", pkg, got, want)
		}
	}
}

// TestDebianMirror reads the archive URI serving bookworm from deb822 and
// one-line sources, skipping security and other suites.
func TestDebianMirror(t *testing.T) {
	dir := t.TempDir()
	deb822 := filepath.Join(dir, "debian.sources")
	if err := os.WriteFile(deb822, []byte(`Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main

Types: deb
# a comment: with a colon
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mirrorFromDeb822(deb822); got != "http://mirror.example/debian" {
		t.Errorf("deb822: %q", got)
	}
	list := filepath.Join(dir, "sources.list")
	if err := os.WriteFile(list, []byte("# deb http://old.example/debian bookworm main\n"+
		"deb-src http://src.example/debian bookworm main\n"+
		"deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian bookworm main contrib\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mirrorFromList(list); got != "http://one.example/debian" {
		t.Errorf("one-line list: %q", got)
	}
}

// TestKernelCandsFromSources reads apt-cache search output of the private
// bookworm-backports list and of the host's lists (which carry
// bookworm-security) and takes the newest release of either, each
// downloaded through the source that lists it; a release both list comes
// from the first.
func TestKernelCandsFromSources(t *testing.T) {
	backports := []string{"-o", "Dir::Etc::SourceList=/cache/apt/bookworm-backports/sources.list"}
	bp := parseKernelCands(series612, `linux-image-6.12.95+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.12.95+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs
linux-image-6.12.95+deb12-amd64-dbg - Debug symbols for linux-image-6.12.95+deb12-amd64
linux-image-6.12.9+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.12.113+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs
`, backports, "")
	host := parseKernelCands(series612, `linux-image-6.12.113+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.12.117+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs
linux-image-6.12.117+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.1.0-57-amd64 - Linux 6.1 for 64-bit PCs (signed)
`, nil, "")
	type got struct {
		Release string
		Host    bool
	}
	var all []got
	for _, c := range mergeKernelCands(bp, host) {
		all = append(all, got{c.release, c.opts == nil})
	}
	want := []got{
		{"6.12.117+deb12-amd64", true},
		{"6.12.113+deb12-amd64", false},
		{"6.12.95+deb12-amd64", false},
		{"6.12.9+deb12-amd64", false},
	}
	if d := cmp.Diff(want, all); d != "" {
		t.Errorf("merged candidates (-want +got):\n%s", d)
	}
	if c := parseKernelCands(series612, "linux-image-6.12.117+deb12-amd64 - x\nlinux-image-6.12.113+deb12-amd64 - x\n", nil,
		"6.12.113+deb12-amd64"); len(c) != 1 || c[0].release != "6.12.113+deb12-amd64" {
		t.Errorf("want 6.12.113+deb12-amd64 alone: %+v", c)
	}
}

// TestAptSources: 6.1 asks the host's apt alone; 6.12 asks the private
// bookworm-backports list, then the host's (bookworm-security), and sets
// up the private list under the cache.
func TestAptSources(t *testing.T) {
	dir := t.TempDir()
	srcs, err := aptSources(dir, series61)
	if err != nil || len(srcs) != 1 || srcs[0] != nil {
		t.Errorf("6.1: %q, %v; want the host's apt alone", srcs, err)
	}
	srcs, err = aptSources(dir, series612)
	if err != nil || len(srcs) != 2 || srcs[1] != nil || !strings.Contains(strings.Join(srcs[0], " "), filepath.Join(dir, "apt", "bookworm-backports")) {
		t.Fatalf("6.12: %q, %v; want the private list, then the host's", srcs, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "apt", "bookworm-backports", "sources.list"))
	if err != nil || !strings.Contains(string(b), " bookworm-backports main") {
		t.Errorf("private sources.list: %q, %v", b, err)
	}
}
