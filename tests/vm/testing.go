package vm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvGate is the variable that enables the VM tests ('make vm-test' sets
// it), so that 'go test ./...' does not boot VMs a second time.
const EnvGate = "GTPQOS_VM"

// Require skips the test, with a one-line reason, unless VM tests are
// enabled (EnvGate=1), it runs as root and qemu and a static busybox are
// installed.
func Require(tb testing.TB) {
	tb.Helper()
	if os.Getenv(EnvGate) != "1" {
		tb.Skipf("VM test: runs under 'make vm-test' (or set %s=1)", EnvGate)
	}
	if interrupted.Load() {
		tb.Skip("VM test: an earlier VM run was interrupted (SIGINT/SIGTERM); not booting another")
	}
	if os.Geteuid() != 0 {
		tb.Skip("VM test needs root (9p export of /, module handling); run 'make vm-test' as root")
	}
	for _, c := range []string{"qemu-system-x86_64", "depmod"} {
		if _, err := exec.LookPath(c); err != nil {
			tb.Skipf("VM test needs %s on PATH ('make deps' installs it)", c)
		}
	}
	if _, err := findStaticBusybox(); err != nil {
		tb.Skipf("VM test: %v", err)
	}
}

// Run boots the guest and runs cfg.Script, after Require. It fails the
// test (and kills qemu) if the guest cannot boot, cannot be set up or does
// not finish within cfg.Timeout; a non-zero scenario exit is returned in
// Result.ExitCode for the caller to judge. An oops, BUG or WARNING in the
// guest kernel's log fails the test unless cfg.AllowKernelErrors. Scenario
// output is streamed to
// t.Log unless cfg.Stream is set. The work directory is removed when the
// test ends.
func Run(tb testing.TB, cfg Config) *Result {
	tb.Helper()
	Require(tb)
	if cfg.Stream == nil {
		lw := &logWriter{tb: tb}
		cfg.Stream = lw
		defer lw.close()
	}
	res, err := RunContext(context.Background(), tb.TempDir(), cfg)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	if res.Retried != "" {
		tb.Logf("vm: booted a second time; the first boot: %s", res.Retried)
	}
	tb.Logf("vm: kernel %s, boot %s, scenario %s, exit %d",
		res.Kernel, res.Boot.Round(100*time.Millisecond), res.Scenario.Round(100*time.Millisecond), res.ExitCode)
	if len(res.KernelErrors) > 0 && !cfg.AllowKernelErrors {
		tb.Errorf("guest kernel reported errors:\n%s\n(full log in Result.Dmesg)", strings.Join(res.KernelErrors, "\n"))
	}
	return res
}

// logWriter sends complete lines to t.Log, prefixed "guest: ".
type logWriter struct {
	mu     sync.Mutex
	tb     testing.TB
	buf    []byte
	closed bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		w.tb.Log("guest: " + string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *logWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.tb.Log("guest: " + string(w.buf))
	}
	w.closed = true
}

// RepoRoot returns the module root (the directory holding go.mod), found
// from the test's working directory.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatalf("repo root: %v", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			tb.Fatalf("repo root: no go.mod above %s", dir)
		}
	}
}

// TestBinary is a Go test binary compiled on the host for a package.
type TestBinary struct {
	// HostPath is the binary on the host.
	HostPath string
	// PkgDir is the package's source directory (the same path in the
	// guest, read-only): run the binary there, as 'go test' does.
	PkgDir string
}

// BuildTestBinary compiles the tests of pkg (relative to the repo root,
// e.g. "./shaper/") with 'go test -c' into a temporary directory. It skips
// the test if pkg has no test files.
func BuildTestBinary(tb testing.TB, pkg string) *TestBinary {
	tb.Helper()
	root := RepoRoot(tb)
	out := filepath.Join(tb.TempDir(), strings.Trim(filepath.Base(pkg), "./")+".test")
	cmd := exec.Command("go", "test", "-c", "-o", out, pkg)
	cmd.Dir = root
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go test -c %s: %v\n%s", pkg, err, b)
	}
	if _, err := os.Stat(out); err != nil {
		tb.Skipf("%s has no test files yet ('go test -c' wrote no binary)", pkg)
	}
	tb.Logf("built %s test binary in %s", pkg, time.Since(start).Round(100*time.Millisecond))
	return &TestBinary{HostPath: out, PkgDir: filepath.Join(root, filepath.Clean(pkg))}
}

// List returns the names of the binary's tests matching the regexp run,
// without running them ('-test.list').
func (b *TestBinary) List(tb testing.TB, run string) []string {
	tb.Helper()
	cmd := exec.Command(b.HostPath, "-test.list", run)
	cmd.Dir = b.PkgDir
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s -test.list %s: %v", b.HostPath, run, err)
	}
	var names []string
	for _, l := range strings.Fields(string(out)) {
		if strings.HasPrefix(l, "Test") || strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "Fuzz") || strings.HasPrefix(l, "Example") {
			names = append(names, l)
		}
	}
	return names
}

// Script returns a scenario line that runs the binary (handed over as
// name via Config.Files) in its package directory with the given flags.
func (b *TestBinary) Script(name string, flags ...string) string {
	q := make([]string, len(flags))
	for i, f := range flags {
		q[i] = shQuote(f)
	}
	return fmt.Sprintf("cd %s && %s/%s %s", shQuote(b.PkgDir), GuestWorkDir, name, strings.Join(q, " "))
}

// KOEnv names the variable holding the path of a gtp5g.ko built from
// v0.10.2 plus gtp5g-patch/ against Debian's linux-headers-6.1.0-N-amd64
// (or linux-headers-6.12.N+deb12-amd64: the module's vermagic picks the
// kernel).
const KOEnv = "GTP5G_KO"

// RequireKO returns $GTP5G_KO after Require, or skips the test with a
// one-line reason when it is unset or not a readable kernel module built
// for a Debian 12 kernel the harness boots (6.1 or 6.12).
func RequireKO(tb testing.TB) string {
	tb.Helper()
	Require(tb)
	ko := os.Getenv(KOEnv)
	if ko == "" {
		tb.Skipf("real gtp5g datapath: set %s=/path/to/gtp5g.ko (v0.10.2 + gtp5g-patch, built for Debian 12's 6.1 or 6.12 kernel)", KOEnv)
	}
	rel, _, err := koRelease(ko)
	if err != nil {
		tb.Skipf("%s: %v", KOEnv, err)
	}
	if seriesOfRelease(rel) == nil {
		tb.Skipf("%s=%s is built for kernel %s, not a Debian 12 6.1.0-N-amd64 or 6.12.N+deb12-amd64 kernel", KOEnv, ko, rel)
	}
	return ko
}

// BuildBinary compiles a main package (a path relative to the repo root,
// such as "./cmd/gtpqos", or an import path in the module's build list)
// with 'go build' and returns the host path; hand it to the guest with
// Config.Files. It skips as Require does first, so that a VM test that
// will not boot builds nothing.
func BuildBinary(tb testing.TB, pkg string) string {
	tb.Helper()
	Require(tb)
	root := RepoRoot(tb)
	out := filepath.Join(tb.TempDir(), filepath.Base(strings.TrimRight(pkg, "/")))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// RequirePatchedKO is RequireKO for tests that need the gtp5g-patch series:
// with a stock module (no gtp5g_qos family in it) it skips with one line.
func RequirePatchedKO(tb testing.TB) string {
	tb.Helper()
	ko := RequireKO(tb)
	b, err := os.ReadFile(ko)
	if err != nil {
		tb.Skipf("%s: %v", KOEnv, err)
	}
	if !bytes.Contains(b, []byte("gtp5g_qos\x00")) {
		tb.Skipf("%s=%s is a stock gtp5g (no gtp5g_qos family): this test needs the gtp5g-patch series", KOEnv, ko)
	}
	return ko
}
