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

// TestHTBProblemsReportedWhenTheyMove: on the incremental path an update
// that leaves every problem as it was says so (ProblemsSame), and the
// observer hears of the problems again only when one moves, so a tree
// where flows carry problems costs an event no walk over them.
func TestHTBProblemsReportedWhenTheyMove(t *testing.T) {
	l := newHTBLab(t, 1e9)
	src := newScriptedSource()
	src.set(1, sessionFlows(1, 0)...)
	bad := flow(2, 1, 1, 4e6, 2e6) // MBR below GBR: refused, with a problem
	src.set(2, bad)
	be := l.backend(t, backends.Options{})
	obs := &recObserver{}
	opt := l.options(src, be)
	opt.Resync, opt.Observer = time.Hour, obs
	startEngine(t, opt)
	obs.waitReport(t, l.dev, 10*time.Second, "start reported", func(r shaper.Report) bool { return len(r.Problems) > 0 })

	// The first update after a full run lists the problems afresh; the
	// ones after it find nothing moved.
	var heard int
	for i, seid := range []uint64{10, 11, 12} {
		added := sessionFlows(seid, 0)
		src.change(seid, added...)
		rep := obs.waitReport(t, l.dev, 10*time.Second, "an unrelated session added", func(r shaper.Report) bool {
			_, ok := r.FlowClass(added[0].ID)
			return ok
		})
		if !hasProblem(rep, bad.ID, shaper.MBRBelowGBR) {
			t.Fatalf("update %d reports %v, without the refused flow's problem", i, rep.Problems)
		}
		switch {
		case i == 0:
			heard = obs.snapshot().problems
		case !rep.ProblemsSame:
			t.Errorf("update %d moved no problem but does not say so", i)
		case obs.snapshot().problems != heard:
			t.Errorf("update %d moved no problem, yet the observer heard of them again", i)
		}
	}

	// The refused flow fixed: its problem goes, and the observer hears.
	fixed := flow(2, 1, 1, 2e6, 4e6)
	src.change(2, fixed)
	rep := obs.waitReport(t, l.dev, 10*time.Second, "the fixed flow's class", func(r shaper.Report) bool {
		_, ok := r.FlowClass(fixed.ID)
		return ok
	})
	if rep.ProblemsSame || hasProblem(rep, bad.ID, shaper.MBRBelowGBR) {
		t.Errorf("after the fix: ProblemsSame %v, problems %v", rep.ProblemsSame, rep.Problems)
	}
	if obs.snapshot().problems == heard {
		t.Errorf("the observer did not hear that the problem went")
	}
}

func hasProblem(r shaper.Report, id shaper.FlowID, kind shaper.ProblemKind) bool {
	for _, p := range r.Problems {
		if p.Flow == id && p.Kind == kind {
			return true
		}
	}
	return false
}
