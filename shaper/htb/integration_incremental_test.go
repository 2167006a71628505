package htb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// TestIntegrationIncrementalAddReadsNothing: in incremental mode, adding
// and removing one flow makes exactly the class and classifier writes and
// does not read the class list back; the kernel ends up as planned and the
// new flow's packets reach its class.
func TestIntegrationIncrementalAddReadsNothing(t *testing.T) {
	l := newLab(t)
	rec := l.rec(Options{Incremental: true})
	pol := plan.DefaultPolicy(100 * mbit)
	t1 := mustPlan(t, seedFlows(), pol, nil)
	if res := mustReconcile(t, rec, t1); res.Incremental || !res.CreatedRoot {
		t.Fatalf("first run: %s (incremental %v); want a full run creating the root", res.Summary(), res.Incremental)
	}
	if n := rec.ClassListReads(); n != 1 {
		t.Fatalf("first run read the class list %d times, want 1", n)
	}

	added := shaper.Flow{ID: shaper.FlowID{SEID: 7, QERID: 1}, QFI: 9, Direction: shaper.Downlink, GBR: mbit, MBR: 2 * mbit, Mark: 0x77}
	t2 := mustPlan(t, append(seedFlows(), added), pol, t1)
	c, ok := t2.FlowClass(added.ID)
	if !ok {
		t.Fatal("plan lacks the added flow")
	}
	res := mustReconcile(t, rec, t2)
	wantWrites, wantLeaves := 3, 1 // the class, its leaf and its map entry / filter
	if !res.Incremental || fmt.Sprint(res.Created) != fmt.Sprint([]uint16{c.Minor}) || len(res.Changed) != 0 ||
		len(res.Deleted) != 0 || len(res.Leaves) != wantLeaves || res.Classifier.Added != 1 ||
		res.Classifier.Changed+res.Classifier.Deleted != 0 || res.Writes != wantWrites {
		t.Errorf("add one: %s (incremental %v, created %x); want incremental, class %x and its classifier entry only, %d writes",
			res.Summary(), res.Incremental, res.Created, c.Minor, wantWrites)
	}
	if n := rec.ClassListReads(); n != 1 {
		t.Errorf("incremental add read the class list (%d reads, want still 1)", n)
	}

	// Remove a seed flow: its entry and class go, nothing else.
	t3 := mustPlan(t, append(seedFlows()[1:], added), pol, t2)
	res = mustReconcile(t, rec, t3)
	// The class is parked as a spare (the policy keeps a pool): a change.
	if !res.Incremental || len(res.Changed) != 1 || len(res.Created)+len(res.Deleted) != 0 ||
		res.Classifier.Deleted != 1 || res.Classifier.Added+res.Classifier.Changed != 0 || res.Writes != 2 {
		t.Errorf("remove one: %s; want incremental, 1 class parked and 1 classifier entry deleted, 2 writes", res.Summary())
	}
	if res := mustReconcile(t, rec, t3); !res.Incremental || !res.InSync() {
		t.Errorf("same tree again: %s (incremental %v); want incremental and in sync", res.Summary(), res.Incremental)
	}
	if n := rec.ClassListReads(); n != 1 {
		t.Errorf("incremental runs read the class list (%d reads, want still 1)", n)
	}

	// The kernel is what the plan says, and the new flow is classified.
	l.matches(t, rec, t3)
	l.send(t, added.Mark, 4, 200)
	l.waitPackets(t, rec, c.Minor, 4)
	if q := l.ns.Run(t, "tc", "-s", "qdisc", "show", "dev", l.dev); !strings.Contains(q, "direct_packets_stat 0 ") {
		t.Errorf("packets went through HTB's unshaped direct queue:\n%s", q)
	}
}

// TestIntegrationIncrementalDriftSeenOnlyByFullRun: a change made behind
// an incremental Reconciler's back is not seen by an incremental run (it
// trusts its last write) but is repaired by the next full one (Resync).
func TestIntegrationIncrementalDriftSeenOnlyByFullRun(t *testing.T) {
	l := newLab(t)
	rec := l.rec(Options{Incremental: true})
	tree := mustPlan(t, seedFlows(), plan.DefaultPolicy(30*mbit), nil)
	first := mustReconcile(t, rec, tree)
	want := l.tcClasses(t)

	l.ns.Run(t, "tc", "class", "change", "dev", l.dev, "parent", "6771:1", "classid", "6771:10", "htb", "rate", "7mbit", "ceil", "9mbit")
	if first.ClassifierKind == classify.KindFw {
		l.ns.Run(t, "tc", "filter", "del", "dev", l.dev, "parent", "6771:", "prio", "10", "handle", "0x3", "fw")
	}
	l.ns.Run(t, "tc", "class", "del", "dev", l.dev, "classid", "6771:11")
	drifted := l.tcClasses(t)
	if strings.Join(drifted, "\n") == strings.Join(want, "\n") {
		t.Fatal("tc did not change the tree")
	}

	res := mustReconcile(t, rec, tree)
	if !res.Incremental || !res.InSync() {
		t.Errorf("incremental run after drift: %s (incremental %v); want incremental, no writes (it trusts its last write)", res.Summary(), res.Incremental)
	}
	if got := l.tcClasses(t); strings.Join(got, "\n") != strings.Join(drifted, "\n") {
		t.Errorf("incremental run changed the drifted tree:\n%s\nwas:\n%s", strings.Join(got, "\n"), strings.Join(drifted, "\n"))
	}

	reads := rec.ClassListReads()
	rec.Resync()
	res = mustReconcile(t, rec, tree)
	if res.Incremental || fmt.Sprint(res.Changed) != "[16]" || fmt.Sprint(res.Created) != "[17]" || len(res.Deleted) != 0 {
		t.Errorf("full run after Resync: %s (incremental %v, changed %x, created %x); want class 10 changed and 11 created",
			res.Summary(), res.Incremental, res.Changed, res.Created)
	}
	if n := rec.ClassListReads(); n != reads+1 {
		t.Errorf("full run read the class list %d times, want 1", n-reads)
	}
	if got := l.tcClasses(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after the full run:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	l.send(t, 3, 4, 200)
	l.waitPackets(t, rec, 0x11, 4)
	if res := mustReconcile(t, rec, tree); !res.Incremental || !res.InSync() {
		t.Errorf("after repair: %s (incremental %v); want incremental, in sync", res.Summary(), res.Incremental)
	}
}

// TestIntegrationIncrementalKeepsUpWithFullRuns drives an incremental
// Reconciler through adds, removals, a session AMBR appearing and going
// (flows moved between parents), a minor changing role, and a failed run;
// after each step a fresh Reconciler reading the kernel must find nothing
// to do, so the memory always matched the kernel.
func TestIntegrationIncrementalKeepsUpWithFullRuns(t *testing.T) {
	l := newLab(t)
	rec := l.rec(Options{Incremental: true})
	pol := plan.DefaultPolicy(100 * mbit)
	mk := func(ambr uint64, qers ...uint32) []shaper.Flow {
		var out []shaper.Flow
		for _, q := range qers {
			out = append(out, shaper.Flow{ID: shaper.FlowID{SEID: 9, QERID: q}, Mark: 0x100 + q, SessionAMBR: ambr})
		}
		return out
	}
	steps := []struct {
		name     string
		flows    []shaper.Flow
		previous bool
	}{
		{"start", mk(0, 1, 2, 3), true},
		{"add and remove", mk(0, 1, 3, 4, 5), true},
		{"session AMBR appears", mk(5*mbit, 1, 3, 4, 5), true},
		{"AMBR rate change", mk(8*mbit, 1, 3, 4, 5), true},
		{"AMBR goes", mk(0, 1, 3, 4), true},
		{"session again", mk(5*mbit, 6, 7), true},
		{"replanned without previous", mk(0, 6, 7), false},
	}
	var prev *plan.Tree
	for i, s := range steps {
		var from *plan.Tree
		if s.previous {
			from = prev
		}
		tree := mustPlan(t, s.flows, pol, from)
		res := mustReconcile(t, rec, tree)
		t.Logf("%s: %s", s.name, res.Summary())
		if i > 0 && !res.Incremental {
			t.Errorf("%s: full run, want incremental", s.name)
		}
		if res := mustReconcile(t, l.rec(Options{}), tree); !res.InSync() {
			t.Errorf("%s: a full run after the incremental one wrote: %s (created %x, changed %x, deleted %x)",
				s.name, res.Summary(), res.Created, res.Changed, res.Deleted)
		}
		prev = tree
	}
	// A failed run drops the memory: the next run reads the kernel.
	if _, err := rec.Reconcile(context.Background(), &plan.Tree{Major: 1}); err == nil {
		t.Fatal("reconcile of a foreign-major tree succeeded")
	}
	reads := rec.ClassListReads()
	if res := mustReconcile(t, rec, prev); res.Incremental || !res.InSync() || rec.ClassListReads() != reads+1 {
		t.Errorf("run after a failure: %s (incremental %v); want a full run (class list read), in sync", res.Summary(), res.Incremental)
	}
	// Default mode reads the kernel every time.
	def := l.rec(Options{})
	for range 2 {
		if res := mustReconcile(t, def, prev); res.Incremental || !res.InSync() {
			t.Errorf("default mode: %s (incremental %v); want a full run, in sync", res.Summary(), res.Incremental)
		}
	}
	if n := def.ClassListReads(); n != 2 {
		t.Errorf("default mode read the class list %d times in 2 runs, want 2", n)
	}
}

// TestIntegrationIncrementalTreeGoneFails: when the root is deleted by hand
// (as when a device leaves the netns and comes back with its ifindex), an
// incremental run that would only write classifier entries must fail
// instead of writing into a map no filter reads, and the next run must
// read the kernel and rebuild.
func TestIntegrationIncrementalTreeGoneFails(t *testing.T) {
	l := newLab(t)
	rec := l.rec(Options{Incremental: true})
	flows := seedFlows()
	pol := plan.DefaultPolicy(30 * mbit)
	tree := mustPlan(t, flows, pol, nil)
	mustReconcile(t, rec, tree)
	want := l.tcClasses(t)

	l.ns.Run(t, "tc", "qdisc", "del", "dev", l.dev, "root")
	// Only a mark changes: the classes stay, so an incremental run would
	// touch nothing but the classifier.
	flows[0].Mark = 0x42
	moved := mustPlan(t, flows, pol, tree)
	if _, err := rec.Reconcile(context.Background(), moved); err == nil {
		t.Fatal("incremental reconcile over a deleted tree succeeded; want an error (full resync needed)")
	}
	res := mustReconcile(t, rec, moved)
	if res.Incremental {
		t.Errorf("run after the failure was incremental: %s", res.Summary())
	}
	if got := l.tcClasses(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after the full run:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
