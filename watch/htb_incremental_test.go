package watch

import (
	"errors"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/vishvananda/netlink"
)

// TestHTBEventsTrustLastWriteResyncReadsKernel: reconciles driven by change
// events trust the last write (the class list is not read back, so a change
// made behind the daemon's back stays), while a resync for lost events
// (ENOBUFS) reads the kernel and repairs it.
func TestHTBEventsTrustLastWriteResyncReadsKernel(t *testing.T) {
	l := newHTBLab(t, 1e9)
	src := newScriptedSource()
	for s := uint64(1); s <= 4; s++ {
		src.set(s, sessionFlows(s, int(s))...)
	}
	h, err := netlink.NewHandleAt(l.ns.Handle)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	rec := htb.NewReconciler(h, l.dev)
	ap := NewShaperApplier(rec, l.pol)
	startEngine(t, Options{Source: src, Downlink: ap, Resync: time.Hour})
	want := l.wantTree(t, src.all())
	l.waitShape(t, want, "start")
	// ap.Tree takes the applier's lock, so the reconcile that made the
	// tree happened before the count is read.
	tree := ap.Tree()
	reads := rec.ClassListReads()

	// Behind the daemon's back: one flow class's rates change.
	victim := tree.FlowClasses()[0]
	l.ns.Run(t, "tc", "class", "change", "dev", l.dev, "parent", tree.Handle(victim.Parent),
		"classid", tree.Handle(victim.Minor), "htb", "rate", "8kbit", "ceil", "8kbit")
	drifted := shape(l.actual(t))

	// A new session by event: installed without reading the classes back.
	added := sessionFlows(9, 0)
	src.change(9, added...)
	eventually(t, 10*time.Second, "event-driven add", func() bool {
		tr := ap.Tree()
		if tr == nil {
			return false
		}
		_, ok := tr.FlowClass(added[0].ID)
		return ok
	})
	ap.Tree()
	if n := rec.ClassListReads(); n != reads {
		t.Errorf("event-driven reconcile read the class list %d times, want 0 (it trusts the last write)", n-reads)
	}
	got := l.actual(t)
	ac, _ := ap.Tree().FlowClass(added[0].ID)
	if k, ok := got.Find(ac.Minor); !ok || k.Ceil != ac.Ceil {
		t.Fatalf("kernel lacks the added flow's class %s (ceil %d)", tree.Handle(ac.Minor), ac.Ceil)
	}
	for _, c := range got.Classes {
		if c.Minor == victim.Minor && c.Ceil == victim.Ceil {
			t.Errorf("class %s repaired by an event-driven reconcile; it must trust its last write until a resync (before: %s)",
				tree.Handle(victim.Minor), drifted)
		}
	}

	// Events lost: the resync reads the kernel and repairs the drift.
	src.emit(Event{Kind: EventResync, Err: errors.New("ENOBUFS")})
	l.waitShape(t, l.wantTree(t, src.all()), "resync after ENOBUFS")
	ap.Tree()
	if n := rec.ClassListReads(); n <= reads {
		t.Errorf("resync after lost events did not read the class list")
	}
}
