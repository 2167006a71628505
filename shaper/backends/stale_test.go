package backends

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/edt"
	"github.com/free5gc/gtpqos/shaper/edtbackend"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// edt pins whose program the device does not run (a device deleted, or a
// namespace gone whose inode number a new one got) are no claim on it: a
// writer of the htb backend opens without --force and removes them. While
// the device's filter runs the pinned program they are the edt backend's,
// and the writer is refused as on edt's tree.
func TestStaleEdtPinsGiveWayToAWriter(t *testing.T) {
	testenv.SkipShort(t)
	SetPinRoot(filepath.Join(testenv.MountBPFFS(t), "gtpqos"))
	t.Cleanup(func() { SetPinRoot("") })
	ns := testenv.NewNetNSPrefix(t, "st-")
	dev := testenv.UniqueName("st")
	ns.AddVethPair(t, dev, dev+"p")
	p, pins := pinEdt(t, ns, dev)
	h := handleIn(t, ns)
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := gtpu.Attach(h, link, gtpu.Egress, p.Program(), edtbackend.FilterName[len(gtpu.NamePrefix):])
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Backend: "htb", NetNS: ns.Handle, Writer: "apply", LockDir: t.TempDir()}
	if _, err := Open(dev, o); err == nil || !strings.Contains(err.Error(), "holds gtpqos's edt backend's objects") {
		t.Fatalf("htb writer on a device running the pinned edt program: %v, want refused", err)
	}
	if err := gtpu.Detach(h, a); err != nil {
		t.Fatal(err)
	}
	be, err := Open(dev, o)
	if err != nil {
		t.Fatalf("htb writer on a device with stale edt pins: %v", err)
	}
	defer be.Close()
	if _, err := os.Stat(pins.Path(edt.PinProgram)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale pin %s after the writer opened: %v", pins.Path(edt.PinProgram), err)
	}
}

// pinEdt loads a small edt program and pins it in dev's pin directory,
// as a run that failed after pinning leaves it; both go when the test ends.
func pinEdt(t *testing.T, ns *testenv.NetNS, dev string) (*edt.Pacer, classify.Pins) {
	t.Helper()
	p, err := edt.Load(edt.LoadOptions{Sessions: 8, Flows: 8, Marks: 8, Keys: 8, Rules: 8})
	if err != nil {
		t.Skipf("cannot load the edt program here: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	pins, err := edtbackend.PinsIn(ns.Handle, dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Pin(pins); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = edt.Unpin(pins) })
	return p, pins
}
