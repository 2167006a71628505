package watch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// stockBackend opens what `gtpqos watch` opens on stock gtp5g: the N3
// backend classified by the GTP-U (TEID, QFI) BPF classifier, and the
// policy it plans with.
func (l *htbLab) stockBackend(t testing.TB) (*htb.Backend, shaper.Policy, *backends.Shared, *netlink.Handle) {
	t.Helper()
	h, err := netlink.NewHandleAt(l.ns.Handle, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	gc := backends.NewShared(l.dev)
	be := l.backend(t, backends.Options{Marks: backends.Unmarked, Shared: gc, Direction: shaper.Downlink})
	pol := l.pol
	pol.Classifier = classify.KindGTPU
	return be, pol.Shaper(), gc, h
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
	be1, pol, gc1, h1 := l.stockBackend(t)
	obs1 := &recObserver{}
	e1, err := New(Options{Source: src, Downlink: withClassList{be1}, DownlinkPolicy: pol, Poll: 50 * time.Millisecond, Resync: time.Hour, Observer: obs1})
	if err != nil {
		t.Fatal(err)
	}
	ctx1, stop1 := context.WithCancel(context.Background())
	done1 := make(chan error, 1)
	go func() { done1 <- e1.Run(ctx1) }()
	first := obs1.waitReport(t, l.dev, 10*time.Second, "stock tree installed", func(r shaper.Report) bool {
		return hasFlows(r, stockFlows())
	})
	stop1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	_ = be1.Close() // the process exits: its background work ends too
	_ = gc1         // left attached, as a stopped daemon leaves it
	_ = h1

	// A new daemon with a new classifier instance adopts the classes and
	// the attached program's map.
	be2, pol, gc2, h2 := l.stockBackend(t)
	t.Cleanup(func() { _ = gc2.Close(h2) })
	log := &changeLog{}
	startEngine(t, Options{Source: src, Downlink: withClassList{be2}, DownlinkPolicy: pol, Poll: 50 * time.Millisecond, Resync: time.Hour, Observer: log})
	eventually(t, 10*time.Second, "second daemon's first reconcile", func() bool { return log.snapshot().applied >= 1 })
	if ops := log.classOps(); len(ops) != 0 {
		t.Fatalf("restart on stock gtp5g touched classes: %q", ops)
	}
	second, _ := log.report(l.dev)
	for _, f := range stockFlows() {
		a, ok1 := first.FlowClass(f.ID)
		b, ok2 := second.FlowClass(f.ID)
		if !ok1 || !ok2 || a.Handle != b.Handle {
			t.Fatalf("flow %s: class %v before restart, %v after (want the same)", f.ID, a, b)
		}
	}
	// Every flow is bound by (TEID, QFI) to its own class: two sessions on
	// QFI 2 do not share one.
	link, err := h2.LinkByName(l.dev)
	if err != nil {
		t.Fatal(err)
	}
	binds, err := gtpu.New(gtpu.Options{N3: l.dev}).Downlink().Bindings(context.Background(), classify.Env{Handle: h2, Link: link, Root: uint32(plan.OwnedMajor) << 16})
	if err != nil {
		t.Fatalf("read (TEID, QFI) bindings: %v", err)
	}
	if len(binds) != len(stockFlows()) {
		t.Fatalf("%d (TEID, QFI) bindings, want one per flow (%d): %v", len(binds), len(stockFlows()), binds)
	}
	for _, b := range binds {
		handle := fmt.Sprintf("%x:%x", plan.OwnedMajor, b.Minor)
		c, ok := findClass(second, handle)
		if !ok || c.Key.TEID != b.TEID || c.Key.QFI != b.QFI {
			t.Errorf("binding teid=%d qfi=%d -> %s: class %+v", b.TEID, b.QFI, handle, c)
		}
	}
	// The backend reads the same bindings back.
	in, err := be2.Inspect(context.Background())
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	for _, f := range stockFlows() {
		want, _ := second.FlowClass(f.ID)
		got, ok := in.Class(want.Handle)
		if !ok || got.Key.TEID != f.TEID || got.Key.QFI != f.QFI {
			t.Errorf("flow %s: inspected class %+v, want %s bound by teid=%d qfi=%d", f.ID, got, want.Handle, f.TEID, f.QFI)
		}
	}
}

// findClass returns rep's class with the given handle.
func findClass(rep shaper.Report, handle string) (shaper.ClassState, bool) {
	for _, c := range rep.Classes {
		if c.Handle == handle {
			return c, true
		}
	}
	return shaper.ClassState{}, false
}
