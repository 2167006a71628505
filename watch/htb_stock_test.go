package watch

import (
	"context"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// stockApplier builds what `gtpqos watch` builds on stock gtp5g: the N3
// tree classified by the GTP-U (TEID, QFI) BPF classifier.
func (l *htbLab) stockApplier(t testing.TB) (*ShaperApplier, *gtpu.Classifier, *netlink.Handle) {
	t.Helper()
	h, err := netlink.NewHandleAt(l.ns.Handle)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	gc := gtpu.New(gtpu.Options{N3: l.dev})
	pol := l.pol
	pol.Classifier = shaper.KindGTPU
	return NewShaperApplier(htb.NewReconciler(h, l.dev, htb.WithClassifier(gc.Downlink())), pol), gc, h
}

// stockFlows are downlink flows as qosview yields them on stock gtp5g: no
// mark, the FAR's TEID toward the gNB and the QFI. Two sessions share QFI 2.
func stockFlows() []shaper.Flow {
	var out []shaper.Flow
	for s := uint64(1); s <= 5; s++ {
		for q := uint32(1); q <= 2; q++ {
			f := flow(s, q, uint8(q+1), uint64(q)*1e6, 5e6)
			f.Mark = 0
			f.TEID = uint32(100 + s)
			out = append(out, f)
		}
	}
	return out
}

func TestHTBStockGTPUClassifierAdoptsAcrossRestart(t *testing.T) {
	l := newHTBLab(t, 1e9)
	src := newScriptedSource()
	src.noEvents = true // stock gtp5g: polling
	for _, f := range stockFlows() {
		src.set(f.ID.SEID, append(src.truth[f.ID.SEID], f)...)
	}
	ap1, gc1, h1 := l.stockApplier(t)
	e1, err := New(Options{Source: src, Downlink: ap1, Poll: 50 * time.Millisecond, Resync: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx1, stop1 := context.WithCancel(context.Background())
	done1 := make(chan error, 1)
	go func() { done1 <- e1.Run(ctx1) }()
	eventually(t, 10*time.Second, "stock tree installed", func() bool {
		tr := ap1.Tree()
		return tr != nil && len(tr.FlowClasses()) == len(stockFlows())
	})
	first := ap1.Tree()
	stop1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	_ = gc1 // left attached, as a stopped daemon leaves it
	_ = h1

	// A new daemon with a new classifier instance adopts the classes and
	// the attached program's map.
	ap2, gc2, h2 := l.stockApplier(t)
	t.Cleanup(func() { _ = gc2.Close(h2) })
	log := &changeLog{}
	startEngine(t, Options{Source: src, Downlink: ap2, Poll: 50 * time.Millisecond, Resync: time.Hour, Observer: log})
	eventually(t, 10*time.Second, "second daemon's first reconcile", func() bool { return log.snapshot().applied >= 1 })
	if ops := log.classOps(); len(ops) != 0 {
		t.Fatalf("restart on stock gtp5g touched classes: %q", ops)
	}
	second := ap2.Tree()
	for _, f := range stockFlows() {
		a, ok1 := first.FlowClass(f.ID)
		b, ok2 := second.FlowClass(f.ID)
		if !ok1 || !ok2 || a.Minor != b.Minor {
			t.Fatalf("flow %s: class %v before restart, %v after (want the same)", f.ID, a, b)
		}
	}
	// Every flow is bound by (TEID, QFI) to its own class: two sessions on
	// QFI 2 do not share one.
	link, err := h2.LinkByName(l.dev)
	if err != nil {
		t.Fatal(err)
	}
	binds, err := gc2.Downlink().Bindings(context.Background(), classify.Env{Handle: h2, Link: link, Root: uint32(htb.OwnedMajor) << 16})
	if err != nil {
		t.Fatalf("read (TEID, QFI) bindings: %v", err)
	}
	if len(binds) != len(stockFlows()) {
		t.Fatalf("%d (TEID, QFI) bindings, want one per flow (%d): %v", len(binds), len(stockFlows()), binds)
	}
	for _, b := range binds {
		c, ok := second.Find(b.Minor)
		if !ok || c.TEID != b.TEID || c.QFI != b.QFI {
			t.Errorf("binding teid=%d qfi=%d -> %x: class %+v", b.TEID, b.QFI, b.Minor, c)
		}
	}
}
