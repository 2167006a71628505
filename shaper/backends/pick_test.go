package backends

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper/edtbackend"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// A caller that names no backend and brings no policy (reset, status,
// verify) gets the backend whose objects the device holds: here the edt
// backend's pins alone (what a failed run can leave), which its Reset
// removes; a device with nothing of ours gets the default, and a named
// backend is the one named.
func TestOpenPicksTheBackendTheDeviceHolds(t *testing.T) {
	ns := testenv.NewNetNSPrefix(t, "eb-")
	SetPinRoot(filepath.Join(testenv.MountBPFFS(t), "gtpqos"))
	t.Cleanup(func() { SetPinRoot("") })
	dev := testenv.UniqueName("ebp")
	ns.AddVethPair(t, dev, dev+"p")
	name := func(o Options) string {
		t.Helper()
		o.NetNS = ns.Handle
		be, err := Open(dev, o)
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		return be.Name()
	}
	if n := name(Options{}); n != Default {
		t.Errorf("bare device: opened %s, want %s", n, Default)
	}
	_, pins := pinEdt(t, ns, dev)
	if n := name(Options{}); n != edtbackend.Name {
		t.Errorf("device with edt pins: opened %s, want %s", n, edtbackend.Name)
	}
	if n := name(Options{Backend: Default}); n != Default {
		t.Errorf("named backend: opened %s, want %s", n, Default)
	}
	be, err := Open(dev, Options{NetNS: ns.Handle, Writer: "reset", LockDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	lines, err := be.Reset(context.Background())
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "pins") {
		t.Errorf("reset: %q, %v; want the pins removed, one line", lines, err)
	}
	if _, err := os.Stat(pins.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pin directory %s after reset: %v", pins.Dir, err)
	}
}
