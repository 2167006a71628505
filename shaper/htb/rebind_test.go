package htb

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// kernelView is t as Reconciler.Actual reads it back: no flow ids, names
// or contracts, only rates and the classifier's keys.
func kernelView(t *plan.Tree) *plan.Tree {
	k := *t
	k.Classes = append([]plan.Class(nil), t.Classes...)
	for i := range k.Classes {
		c := &k.Classes[i]
		c.Flow, c.Name, c.GBR, c.MBR, c.SEID, c.Direction = shaper.FlowID{}, "", 0, 0, 0, 0
	}
	return &k
}

// A tree read from the kernel with two marks swapped (A's mark bound to
// B's class and B's to A's) must not make Plan swap the classes' rates:
// each flow keeps the class that carries its contract, and only the
// binding (the Mark of the planned class) differs from the kernel's.
func TestPlanDistrustsBindingThatContradictsContract(t *testing.T) {
	pol := plan.DefaultPolicy(30 * mbit)
	first := mustPlan(t, seedFlows(), pol, nil)
	k := kernelView(first)
	for i := range k.Classes { // swap the bindings of 10 (A) and 11 (B)
		switch k.Classes[i].Minor {
		case 0x10:
			k.Classes[i].Mark = 3
		case 0x11:
			k.Classes[i].Mark = 2
		}
	}
	again := mustPlan(t, seedFlows(), pol, k)
	if diff := cmp.Diff(compact(first), compact(again)); diff != "" {
		t.Errorf("plan against swapped bindings moved flows between classes (-clean +replanned):\n%s", diff)
	}
	// A contract that changed is still a change of the bound class.
	changed := seedFlows()
	changed[0].GBR, changed[0].MBR = 12*mbit, 14*mbit
	got := mustPlan(t, changed, pol, kernelView(first))
	if c, _ := got.Find(0x10); c.Mark != 2 || c.Rate != 12*mbit || c.Ceil != 14*mbit {
		t.Errorf("A after its contract changed: %+v; want class 10 changed to 12/14", c)
	}
	// Two flows with the same contract and swapped marks cannot be told
	// apart by rates: the bindings are kept (nothing changes either way).
	same := seedFlows()
	same[1].GBR, same[1].MBR = same[0].GBR, same[0].MBR
	sameTree := mustPlan(t, same, pol, nil)
	ks := kernelView(sameTree)
	ks.Classes[2].Mark, ks.Classes[3].Mark = ks.Classes[3].Mark, ks.Classes[2].Mark
	if got := mustPlan(t, same, pol, ks); got.Classes[2].Mark != 3 || got.Classes[3].Mark != 2 {
		t.Errorf("equal contracts: %v; want the kernel's bindings kept", compact(got))
	}
}

// A tree read from the kernel whose classifier lost a flow's entry (or
// all of them) while the pool holds spare classes: each unbound flow takes
// back the class that carries exactly its rate and ceil, not a spare and
// not a fresh class id, and the spares stay spares.
func TestPlanUnboundFlowTakesItsContractsClass(t *testing.T) {
	pol := plan.DefaultPolicy(30 * mbit)
	pol.Pool = 2
	leaving := []shaper.Flow{
		{ID: shaper.FlowID{SEID: 2, QERID: 1}, QFI: 5, Direction: shaper.Downlink, MBR: 2 * mbit, Mark: 5},
		{ID: shaper.FlowID{SEID: 3, QERID: 1}, QFI: 6, Direction: shaper.Downlink, MBR: 3 * mbit, Mark: 6},
	}
	clean := mustPlan(t, seedFlows(), pol, mustPlan(t, append(seedFlows(), leaving...), pol, nil))
	spares := 0
	for _, c := range clean.Classes {
		if c.Role == shaper.RoleSpare {
			spares++
		}
	}
	if spares != 2 {
		t.Fatalf("clean plan: %v; want 2 spares parked", compact(clean))
	}
	for _, unbind := range []string{"A", "all"} {
		k := kernelView(clean)
		for i := range k.Classes {
			c := &k.Classes[i]
			c.TEID, c.QFI = 0, 0 // a mark classifier binds by mark alone
			if c.Role == shaper.RoleFlow && (unbind == "all" || c.Mark == 2) {
				c.Mark = 0
			}
		}
		again := mustPlan(t, seedFlows(), pol, k)
		if diff := cmp.Diff(compact(clean), compact(again)); diff != "" {
			t.Errorf("unbound %s: the plan moved flows or took spares (-clean +replanned):\n%s", unbind, diff)
		}
	}
}

// The same on a device: the bindings of two flows are swapped behind
// gtpqos's back; a fresh apply (a new process, planning against the
// kernel) repairs the binding and leaves every class's rates as they were,
// so each class keeps counting its own flow.
func TestIntegrationSwappedBindingRepairedNotRates(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	pol := plan.DefaultPolicy(30 * mbit)
	be := l.open(Options{})
	if _, err := be.Apply(ctx, seedFlows(), pol.Shaper(), shaper.ApplyOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	classes := l.tcClasses(t)
	rec := l.rec(Options{})
	tr, err := rec.Actual(ctx)
	if err != nil {
		t.Fatal(err)
	}
	swapped := tr.Table()
	for i := range swapped.Entries {
		switch swapped.Entries[i].Mark {
		case 2:
			swapped.Entries[i].Mark = 3
		case 3:
			swapped.Entries[i].Mark = 2
		}
	}
	env := l.classifierEnv(t)
	if _, err := rec.builtin(tr.Classifier).Sync(ctx, env, swapped); err != nil {
		t.Fatalf("swap the bindings: %v", err)
	}
	l.send(t, 2, 4, 200) // A's packets now count in B's class
	st := l.waitPackets(t, rec, 0x11, 4)

	rep, err := l.open(Options{}).Apply(ctx, seedFlows(), pol.Shaper(), shaper.ApplyOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	var classChanges int
	for _, c := range rep.Changes {
		if c.Object == "class" {
			classChanges++
		}
	}
	if classChanges != 0 || rep.Writes != 2 {
		t.Errorf("repair: %s, changes %v; want the 2 bindings rewritten and no class touched", rep.Summary, rep.Changes)
	}
	if now := l.tcClasses(t); cmp.Diff(classes, now) != "" {
		t.Errorf("class rates changed by the repair:\n%s", cmp.Diff(classes, now))
	}
	l.send(t, 2, 3, 200)
	l.waitPackets(t, rec, 0x10, 3)
	if after, _ := rec.ClassStats(ctx); after[uint32(plan.OwnedMajor)<<16|0x11].Packets != st.Packets {
		t.Errorf("B's class kept counting A's packets after the repair")
	}
}
