package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A checkout under /tmp (where CI may clone) is hidden by the guest's
// tmpfs; the harness must find it and mount it again at the same path.
func TestRepoUnderTmpfsIsSharedAgain(t *testing.T) {
	root, err := os.MkdirTemp("/tmp", "gtpqos-repo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	pkg := filepath.Join(root, "tests", "vm")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	if got := repoUnderTmpfs(); got != root {
		t.Fatalf("repoUnderTmpfs() in %s = %q, want %q", pkg, got, root)
	}
	script := initScript(nil, initParams{kernel: &Kernel{}, repo: root})
	want := "mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose repo '/host" + root + "'"
	if !strings.Contains(script, want) {
		t.Fatalf("init script does not mount the repo again; want a line with\n%s\nin:\n%s", want, script)
	}
	// The repo mount must come after the tmpfs that hides it.
	if strings.Index(script, want) < strings.Index(script, "tmpfs /host/tmp") {
		t.Fatalf("repo mounted before the tmpfs on /tmp:\n%s", script)
	}
}

// A checkout elsewhere (/work/main here) is visible through the host root
// share and needs no extra mount.
func TestRepoOutsideTmpfsNeedsNoShare(t *testing.T) {
	dir, err := os.MkdirTemp("/var/lib", "gtpqos-repo-")
	if err != nil {
		t.Skipf("cannot make a directory outside tmpfs paths: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if got := repoUnderTmpfs(); got != "" {
		t.Fatalf("repoUnderTmpfs() in %s = %q, want \"\"", dir, got)
	}
	if strings.Contains(initScript(nil, initParams{kernel: &Kernel{}}), " repo ") {
		t.Fatal("init script mounts a repo share although none was asked for")
	}
}
