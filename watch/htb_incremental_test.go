package watch

import (
	"errors"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
)

// TestHTBEventsTrustLastWriteResyncReadsKernel: reconciles driven by change
// events trust the last write (the class list is not read back, so a change
// made behind the daemon's back stays), while a resync for lost events
// (ENOBUFS) reads the kernel and repairs it. The backend is opened as the
// daemon opens it (incremental); the engine's Resync before a full resync
// is what makes it read the kernel.
func TestHTBEventsTrustLastWriteResyncReadsKernel(t *testing.T) {
	l := newHTBLab(t, 1e9)
	src := newScriptedSource()
	for s := uint64(1); s <= 4; s++ {
		src.set(s, sessionFlows(s, int(s))...)
	}
	be := l.backend(t, backends.Options{})
	rec := be.Reconciler()
	obs := &recObserver{}
	opt := l.options(src, be)
	opt.Resync, opt.Observer = time.Hour, obs
	startEngine(t, opt)
	want := l.wantTree(t, src.all())
	l.waitShape(t, want, "start")
	// The observer gets the report after Apply returned, so the reconcile
	// that made the tree happened before the count is read.
	rep := obs.waitReport(t, l.dev, 10*time.Second, "start reported", func(r shaper.Report) bool {
		return hasFlows(r, downlinkOf(src.all()))
	})
	reads := rec.ClassListReads()
	if reads == 0 {
		t.Fatalf("the start did not read the device's class list (a full resync must)")
	}

	// Behind the daemon's back: one flow class's rates change.
	victim := flowClasses(rep)[0]
	l.ns.Run(t, "tc", "class", "change", "dev", l.dev, "parent", victim.Parent,
		"classid", victim.Handle, "htb", "rate", "8kbit", "ceil", "8kbit")
	drifted := shape(l.actual(t))

	// A new session by event: installed without reading the classes back.
	added := sessionFlows(9, 0)
	src.change(9, added...)
	rep = obs.waitReport(t, l.dev, 10*time.Second, "event-driven add", func(r shaper.Report) bool {
		_, ok := r.FlowClass(added[0].ID)
		return ok
	})
	if n := rec.ClassListReads(); n != reads {
		t.Errorf("event-driven reconcile read the class list %d times, want 0 (it trusts the last write)", n-reads)
	}
	got := l.actual(t)
	ac, _ := rep.FlowClass(added[0].ID)
	if k, ok := findHandle(got, ac.Handle); !ok || k.Ceil != ac.Ceil {
		t.Fatalf("kernel lacks the added flow's class %s (ceil %d)", ac.Handle, ac.Ceil)
	}
	if k, ok := findHandle(got, victim.Handle); ok && k.Ceil == victim.Ceil {
		t.Errorf("class %s repaired by an event-driven reconcile; it must trust its last write until a resync (before: %s)",
			victim.Handle, drifted)
	}

	// Events lost: the resync reads the kernel and repairs the drift.
	applied := obs.snapshot().applied
	src.emit(Event{Kind: EventResync, Err: errors.New("ENOBUFS")})
	l.waitShape(t, l.wantTree(t, src.all()), "resync after ENOBUFS")
	eventually(t, 10*time.Second, "the resync reported", func() bool { return obs.snapshot().applied > applied })
	if n := rec.ClassListReads(); n <= reads {
		t.Errorf("resync after lost events did not read the class list")
	}
}
