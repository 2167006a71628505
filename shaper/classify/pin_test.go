package classify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// bpffs mounts a bpffs of the test's own and points the pin root into it.
func bpffs(t *testing.T) string {
	t.Helper()
	mnt := testenv.MountBPFFS(t)
	old := PinRoot()
	SetPinRoot(filepath.Join(mnt, "gtpqos"))
	t.Cleanup(func() { SetPinRoot(old) })
	return mnt
}

func TestPinsReplaceLookupRemove(t *testing.T) {
	bpffs(t)
	p, err := DevicePins("eth1")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Skipf("create a BPF map: %v", err)
	}
	defer m.Close()
	for i := 0; i < 2; i++ { // the second replaces the first
		if err := p.Replace("gtpqos_marks", m.FD()); err != nil {
			t.Fatal(err)
		}
	}
	path, ok, err := p.Lookup("gtpqos_marks")
	if err != nil || !ok || path != p.Path("gtpqos_marks") {
		t.Fatalf("Lookup = %q %v %v", path, ok, err)
	}
	// A file that is not ours stays.
	other := p.Path("someone_else")
	if err := m.Pin(other); err != nil {
		t.Fatal(err)
	}
	if err := p.Remove("gtpqos_marks"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p.Path("gtpqos_marks")); !os.IsNotExist(err) {
		t.Errorf("pin still there: %v", err)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("Remove took a pin it does not own: %v", err)
	}
	_ = os.Remove(other)
	if err := p.Remove("gtpqos_marks"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p.Dir); !os.IsNotExist(err) {
		t.Errorf("empty device directory left: %v", err)
	}
}

func TestPinsRefuse(t *testing.T) {
	mnt := bpffs(t)
	p, err := DevicePins("eth1")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Ensure(); err != nil {
		t.Fatal(err)
	}
	// A planted symlink where a pin goes.
	if err := os.Symlink("/etc/passwd", p.Path("gtpqos_mark24")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Lookup("gtpqos_mark24"); err == nil || !strings.Contains(err.Error(), "refusing to follow") {
		t.Errorf("Lookup of a symlink: %v", err)
	}
	if err := p.Remove("gtpqos_mark24"); err == nil {
		t.Error("Remove deleted a symlink it did not pin")
	}
	_ = os.Remove(p.Path("gtpqos_mark24"))
	// A directory others may write.
	if err := os.Chmod(p.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("Check of a 0777 directory: %v", err)
	}
	_ = os.Chmod(p.Dir, 0o755)
	// A symlinked directory.
	ns := filepath.Dir(p.Dir)
	if err := os.RemoveAll(p.Dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mnt, p.Dir); err != nil {
		t.Fatal(err)
	}
	if err := p.Ensure(); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Ensure through a symlinked directory: %v", err)
	}
	_ = os.Remove(p.Dir)
	_ = ns
	// Not a bpffs.
	SetPinRoot(filepath.Join(t.TempDir(), "gtpqos"))
	p, _ = DevicePins("eth1")
	if err := p.Ensure(); err == nil || !strings.Contains(err.Error(), "not on a bpffs") {
		t.Errorf("Ensure on tmpfs: %v", err)
	}
	if _, ok, err := p.Lookup("gtpqos_mark24"); ok || err != nil {
		t.Errorf("Lookup without a bpffs = %v %v, want nothing found", ok, err)
	}
	if _, err := DevicePins("../x"); err == nil {
		t.Error("a device name with a slash was accepted")
	}
}

// Root reads what a daemon running as its own user pinned (status and
// reset as root), but never creates pins in that user's directory.
func TestPinsRootReadsDaemonUsersPins(t *testing.T) {
	bpffs(t)
	p, err := DevicePins("eth1")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Skipf("create a BPF map: %v", err)
	}
	defer m.Close()
	if err := p.Replace("gtpqos_marks", m.FD()); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{p.Root, filepath.Dir(p.Dir), p.Dir} {
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if path, ok, err := p.Lookup("gtpqos_marks"); err != nil || !ok || path != p.Path("gtpqos_marks") {
		t.Errorf("root's Lookup in uid 65534's pin directory = %q %v %v, want the pin", path, ok, err)
	}
	if err := p.Ensure(); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("root's Ensure in uid 65534's pin directory: %v, want it refused", err)
	}
}
