package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// MountBPFFS mounts a bpffs of the test's own, unmounted when the test
// ends, and returns where; it skips where that is not possible (not
// root, no bpffs). A test that pins points the pin root into it.
func MountBPFFS(tb testing.TB) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to mount a bpffs")
	}
	mnt := tb.TempDir()
	if out, err := exec.Command("mount", "-t", "bpf", "bpf", mnt).CombinedOutput(); err != nil {
		tb.Skipf("mount bpffs: %v %s", err, out)
	}
	tb.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	return mnt
}
