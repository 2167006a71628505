package edtbackend

import (
	"path/filepath"
	"testing"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/edt"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// A backend adopts the pinned program and maps only while the device's
// filter runs that program: pins the device does not run were another
// device's (one deleted, or of a namespace gone whose inode number this
// one got), and their maps hold that device's flows. Needs no sch_fq.
func TestAdoptOnlyPinsTheDeviceRuns(t *testing.T) {
	testenv.SkipShort(t)
	classify.SetPinRoot(filepath.Join(testenv.MountBPFFS(t), "gtpqos"))
	t.Cleanup(func() { classify.SetPinRoot("") })
	ns := testenv.NewNetNSPrefix(t, "sa-")
	dev := testenv.UniqueName("sa")
	ns.AddVethPair(t, dev, dev+"p")
	p, err := edt.Load(edt.LoadOptions{Sessions: 8, Flows: 8, Marks: 8, Keys: 8, Rules: 8})
	if err != nil {
		t.Skipf("cannot load the edt program here: %v", err)
	}
	defer p.Close()
	pins, err := PinsIn(ns.Handle, dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Pin(pins); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = edt.Unpin(pins) })
	b := openIn(t, ns, dev)
	defer b.Close()
	if got, err := b.adopt(); err != nil || got != nil {
		t.Fatalf("adopt with pins the device does not run: %v, %v; want none", got, err)
	}
	if stale, err := Stale(b.h, ns.Handle, dev); err != nil || !stale {
		t.Errorf("Stale without the filter: %v, %v; want true", stale, err)
	}
	link, err := b.h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gtpu.Attach(b.h, link, gtpu.Egress, p.Program(), FilterName[len(gtpu.NamePrefix):]); err != nil {
		t.Fatal(err)
	}
	got, err := b.adopt()
	if err != nil || got == nil {
		t.Fatalf("adopt with the device running the pinned program: %v, %v; want it", got, err)
	}
	if stale, err := Stale(b.h, ns.Handle, dev); err != nil || stale {
		t.Errorf("Stale with the filter: %v, %v; want false", stale, err)
	}
}
