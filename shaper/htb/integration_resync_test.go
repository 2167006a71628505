package htb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

// TestIntegrationResyncFromKeptPlan: after Updates, an Apply of the flows
// the backend already holds (the daemon's periodic resync) reads the
// device back and repairs drift from the kept plan, without planning
// anew (the kept plan stays the same object), and leaves the device as a
// full plan of the same flows would (a fresh backend adopting it writes
// nothing). Other flows, or another policy, plan in full.
func TestIntegrationResyncFromKeptPlan(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	be, pol := l.openWithoutPool()
	flows := []shaper.Flow{updateFlow(1, 1, 1, 0), updateFlow(2, 1, 0, 10), updateFlow(2, 2, 0, 10), updateFlow(3, 1, 2, 0)}
	if _, err := be.Apply(ctx, flows, pol.Shaper(), shaper.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	added := []shaper.Flow{updateFlow(4, 1, 3, 0), updateFlow(4, 2, 0, 0)}
	if _, err := be.Update(ctx, map[uint64][]shaper.Flow{4: added}, pol.Shaper()); err != nil {
		t.Fatal(err)
	}
	flows = append(flows, added...)
	kept := be.plan
	want := l.tcClasses(t)

	// Drift: a flow class's rate changed, another class deleted (a class
	// a fw filter points at cannot be: its filter goes first).
	c3, _ := kept.Classes.Get(kept.Minor[shaper.FlowID{SEID: 3, QERID: 1}])
	c4, _ := kept.Classes.Get(kept.Minor[shaper.FlowID{SEID: 4, QERID: 2}])
	l.ns.Run(t, "tc", "class", "change", "dev", l.dev, "parent", "6771:1", "classid", fmt.Sprintf("6771:%x", c3.Minor), "htb", "rate", "7mbit", "ceil", "9mbit")
	if strings.Contains(l.ns.Run(t, "tc", "filter", "show", "dev", l.dev, "parent", "6771:"), " fw ") {
		l.ns.Run(t, "tc", "filter", "del", "dev", l.dev, "parent", "6771:", "prio", "10", "handle", fmt.Sprintf("%#x", c4.Mark), "fw")
	}
	l.ns.Run(t, "tc", "class", "del", "dev", l.dev, "classid", fmt.Sprintf("6771:%x", c4.Minor))

	reads := be.Reconciler().ClassListReads()
	be.Resync()
	rep, err := be.Apply(ctx, flows, pol.Shaper(), shaper.ApplyOptions{NoClassList: true})
	if err != nil {
		t.Fatal(err)
	}
	if be.plan != kept {
		t.Error("a resync of the kept flows planned anew")
	}
	if n := be.Reconciler().ClassListReads(); n != reads+1 {
		t.Errorf("the resync read the class list %d times, want 1", n-reads)
	}
	if rep.Classes != nil {
		t.Errorf("a resync asked for no class list reported %d classes", len(rep.Classes))
	}
	if rep.Flows != len(flows) || rep.ClassCount != len(kept.Desired().Classes) || rep.Writes == 0 {
		t.Errorf("resync report: %d flows, %d classes, %d writes (%s); want %d flows, every class, the repair's writes",
			rep.Flows, rep.ClassCount, rep.Writes, rep.Summary, len(flows))
	}
	if got := l.tcClasses(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after the resync:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	fresh := l.open(Options{Incremental: true})
	if rep, err := fresh.Apply(ctx, flows, pol.Shaper(), shaper.ApplyOptions{}); err != nil || rep.Writes != 0 {
		t.Errorf("a fresh backend planning the same flows: %d writes (%s), %v; want none", rep.Writes, rep.Summary, err)
	}

	// Another flow list, or another policy, is planned.
	rep, err = be.Apply(ctx, flows[1:], pol.Shaper(), shaper.ApplyOptions{NoClassList: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Classes != nil || rep.ClassCount == 0 {
		t.Errorf("a full apply asked for no class list: %d classes listed, %d counted", len(rep.Classes), rep.ClassCount)
	}
	if be.plan == kept {
		t.Error("an Apply of other flows kept the old plan")
	}
	kept = be.plan
	pol.DefaultRate++
	if _, err := be.Apply(ctx, flows[1:], pol.Shaper(), shaper.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if be.plan == kept {
		t.Error("an Apply under another policy kept the old plan")
	}
}
