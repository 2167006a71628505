package edtbackend

import (
	"context"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

// Two GBR flows of 12 Mbit/s on testPolicy's 20 Mbit/s link: only one
// fits. held has the higher FlowID, so FlowID order alone admits
// newcomer.
var (
	held      = shaper.Flow{ID: shaper.FlowID{SEID: 1, QERID: 2}, Name: "held", QFI: 2, GBR: 12e6, MBR: 15e6, Mark: 0x12}
	newcomer  = shaper.Flow{ID: shaper.FlowID{SEID: 1, QERID: 1}, Name: "new", QFI: 3, GBR: 12e6, MBR: 15e6, Mark: 0x11}
	heldAlone = []shaper.Flow{held}
	bothGBRs  = []shaper.Flow{newcomer, held}
)

// admittedNames is the names of p's flows.
func admittedNames(p *Plan) map[string]bool {
	out := map[string]bool{}
	for _, f := range p.Flows {
		out[f.Flow.Name] = true
	}
	return out
}

// A flow the maps hold is admitted before a new one, whatever their
// FlowIDs; one that asks for more GBR than it holds still comes before a
// new one; a mark two flows ask for stays with the flow that holds it.
func TestPlanAdmitsHeldFlowsFirst(t *testing.T) {
	pol := testPolicy()
	if got := admittedNames(MakePlan(bothGBRs, pol)); !got["new"] || got["held"] {
		t.Fatalf("FlowID order admitted %v; the test wants it to admit the newcomer", got)
	}
	h := newHeldGBR()
	h.add(planFlow(pol, held, held.Mark, 0).Spec, held.ID)
	p := makePlan(bothGBRs, pol, h.rank)
	if got := admittedNames(p); !got["held"] || got["new"] {
		t.Errorf("held first admitted %v, want held alone", got)
	}
	if !orderMatters(p.Problems) {
		t.Errorf("problems %v: want the newcomer's refusal", p.Problems)
	}

	small := held
	small.GBR = 8e6
	h = newHeldGBR()
	h.add(planFlow(pol, small, small.Mark, 0).Spec, held.ID)
	if got := admittedNames(makePlan(bothGBRs, pol, h.rank)); !got["held"] || got["new"] {
		t.Errorf("a held flow that grew admitted %v, want it before the newcomer", got)
	}

	thief := newcomer
	thief.GBR, thief.Mark = 0, held.Mark
	h = newHeldGBR()
	h.add(planFlow(pol, held, held.Mark, 0).Spec, held.ID)
	p = makePlan([]shaper.Flow{thief, held}, pol, h.rank)
	if got := admittedNames(p); !got["held"] || got["new"] {
		t.Errorf("a mark two flows ask for went to %v, want its holder", got)
	}
	if orderMatters(MakePlan(heldAlone, pol).Problems) {
		t.Error("a plan that refuses nothing: order should not matter")
	}
}

// Update admits a session's held flows before its new ones: a newcomer
// with a lower FlowID does not push out the session's GBR flow.
func TestUpdateKeepsTheSessionsHeldFlows(t *testing.T) {
	pol := testPolicy()
	p := MakePlan(heldAlone, pol)
	in := (&Backend{}).newIncremental(p, heldAlone, pol, pol)
	if in == nil {
		t.Fatal("no incremental index for marked flows")
	}
	sp := in.planSession(bothGBRs, in.release(p, 1))
	if len(sp.flows) != 1 || sp.flows[0].Flow.Name != "held" {
		t.Errorf("planned %v, want held alone", sp.flows)
	}
	if !orderMatters(sp.problems) {
		t.Errorf("problems %v: want the newcomer's refusal", sp.problems)
	}
}

// On a device: after held alone, applying both keeps held; Update does
// too; a backend opened afresh (which reads the maps) applies both with no
// write. Needs sch_fq (the VM).
func TestIntegrationApplyKeepsHeldGBR(t *testing.T) {
	ns, dev := edtDevice(t, "ek-", "eku")
	ctx, pol := context.Background(), testPolicy()
	b := openIn(t, ns, dev)
	if _, err := b.Apply(ctx, heldAlone, pol, shaper.ApplyOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update(ctx, map[uint64][]shaper.Flow{1: bothGBRs}, pol); err != nil {
		t.Fatal(err)
	}
	if got := admittedNames(b.last); !got["held"] || got["new"] {
		t.Errorf("after Update: %v, want held alone", got)
	}
	rep, err := b.Apply(ctx, bothGBRs, pol, shaper.ApplyOptions{})
	if err != nil || rep.Writes != 0 || !admittedNames(b.last)["held"] {
		t.Errorf("apply of both over the update: %v, %d writes %v, flows %v; want held and no write", err, rep.Writes, rep.Changes, admittedNames(b.last))
	}
	b.Close()
	b = openIn(t, ns, dev)
	defer func() { _, _ = b.Reset(ctx); b.Close() }()
	rep, err = b.Apply(ctx, bothGBRs, pol, shaper.ApplyOptions{})
	if err != nil || rep.Writes != 0 || !admittedNames(b.last)["held"] {
		t.Errorf("a fresh backend's apply of both: %v, %d writes %v, flows %v; want held and no write", err, rep.Writes, rep.Changes, admittedNames(b.last))
	}
}
