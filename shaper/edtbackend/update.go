package edtbackend

import (
	"fmt"
	"maps"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// incremental is what Update needs to change a few sessions of the last
// plan without planning every flow again (MakePlan walks, sorts and
// admits them all: 1.3 s an event at 10,000 flows in the TCG guest, which
// a million sessions would make minutes): admission's ledger, where each
// planned flow sits in the plan, and the given flows by session. It
// serves plans whose flows all have marks (the patched gtp5g's), with no
// N3 marker and no SDF rules, whose keyed ids and tables are the whole
// plan's; those Updates plan everything, as Apply does.
type incremental struct {
	pol    shaper.Policy // as given to the Apply (before its overhead is resolved)
	cpol   shaper.Policy // as MakePlan checked and resolved it
	led    *shaper.Ledger
	at     map[shaper.FlowID]int      // index in the plan's Flows
	bySEID map[uint64][]shaper.FlowID // the given flows (Backend.flows) by session
}

// newIncremental indexes p, planned from flows under pol (resolved: pol
// with the device's overhead), for Update; nil where p does not qualify.
func (b *Backend) newIncremental(p *Plan, flows []shaper.Flow, pol, resolved shaper.Policy) *incremental {
	if b.opt.Marker != nil || len(b.sdf) > 0 || p.Rules != nil {
		return nil
	}
	cpol, _, ok := shaper.CheckPolicy(resolved)
	if !ok {
		return nil
	}
	in := &incremental{pol: pol, cpol: cpol, led: shaper.NewLedger(cpol), at: make(map[shaper.FlowID]int, len(p.Flows)),
		bySEID: map[uint64][]shaper.FlowID{}}
	for i, f := range p.Flows {
		if f.Flow.Mark == 0 {
			return nil
		}
		if _, _, ok := in.led.Admit(f.Flow); !ok {
			return nil // admitted once with the same GBRs: never, but then plan whole
		}
		in.at[f.Flow.ID] = i
	}
	for _, f := range flows {
		in.bySEID[f.ID.SEID] = append(in.bySEID[f.ID.SEID], f.ID)
	}
	return in
}

// sessionPlan is what Update plans for one session: its admitted flows'
// entries, its AMBR (0: none), the problems its flows have.
type sessionPlan struct {
	flows    []PlannedFlow
	ambr     uint64
	problems []shaper.Problem
}

// planSession admits and plans one session's flows against the ledger
// (which holds every other flow), as a device's full apply would: each
// flow checked, the flows its old entries hold (old, by id) admitted
// first, then by FlowID, a GBR flow admitted while the GBRs fit, the
// session's AMBR from its first non-GBR flow with one. Every flow has a
// mark (updateFast checked).
func (in *incremental) planSession(fs []shaper.Flow, old map[uint32]PlannedFlow) (sp sessionPlan) {
	fs = slices.Clone(fs)
	slices.SortStableFunc(fs, func(a, c shaper.Flow) int { return shaper.CompareFlowID(a.ID, c.ID) })
	var checked []shaper.Flow
	for i, f := range fs {
		if i > 0 && fs[i-1].ID == f.ID {
			sp.problems = append(sp.problems, shaper.Problem{Kind: shaper.DuplicateFlow, Severity: shaper.Error, Flow: f.ID, Name: f.Label(),
				Field: "id", Detail: fmt.Sprintf("flow %s listed twice", f.ID)})
			continue
		}
		ps, ok := shaper.CheckFlow(&f, &in.cpol, checkFlow)
		sp.problems = append(sp.problems, ps...)
		if ok {
			checked = append(checked, f)
		}
	}
	held := newHeldGBR()
	for _, h := range old {
		held.add(h.Spec, h.Flow.ID)
	}
	slices.SortStableFunc(checked, func(a, c shaper.Flow) int { return held.rank(&a) - held.rank(&c) })
	var admitted []shaper.Flow
	for _, f := range checked {
		g, ps, ok := in.led.Admit(f)
		sp.problems = append(sp.problems, ps...)
		if ok {
			admitted = append(admitted, g)
		}
	}
	slices.SortStableFunc(admitted, func(a, c shaper.Flow) int { return shaper.CompareFlowID(a.ID, c.ID) })
	for _, f := range admitted {
		if in.cpol.Mode == shaper.Aware && f.GBR == 0 && f.SessionAMBR != 0 && sp.ambr == 0 {
			sp.ambr = min(f.SessionAMBR, in.cpol.LinkRate)
		}
	}
	for _, f := range admitted {
		ambr := sp.ambr
		if f.GBR != 0 || f.SessionAMBR == 0 || in.cpol.Mode != shaper.Aware {
			ambr = 0
		}
		sp.flows = append(sp.flows, planFlow(in.cpol, f, f.Mark, ambr))
	}
	return sp
}

// release gives back the ledger's share of the session's planned flows
// and returns them by id.
func (in *incremental) release(p *Plan, seid uint64) map[uint32]PlannedFlow {
	old := map[uint32]PlannedFlow{}
	for _, id := range in.bySEID[seid] {
		if i, ok := in.at[id]; ok {
			in.led.Release(p.Flows[i].Flow)
			old[p.Flows[i].ID] = p.Flows[i]
		}
	}
	return old
}

// remove takes flow id out of p.Flows (the last one moves into its place).
func (in *incremental) remove(p *Plan, id shaper.FlowID) {
	i, ok := in.at[id]
	if !ok {
		return
	}
	last := len(p.Flows) - 1
	p.Flows[i] = p.Flows[last]
	in.at[p.Flows[i].Flow.ID] = i
	p.Flows = p.Flows[:last]
	delete(in.at, id)
}

// add appends f to p.Flows.
func (in *incremental) add(p *Plan, f PlannedFlow) {
	in.at[f.Flow.ID] = len(p.Flows)
	p.Flows = append(p.Flows, f)
}

// problemsBut is ps without the problems of flows in seids.
func problemsBut(ps []shaper.Problem, seids map[uint64][]shaper.Flow) []shaper.Problem {
	return slices.DeleteFunc(slices.Clone(ps), func(p shaper.Problem) bool {
		_, ok := seids[p.Flow.SEID]
		return ok && p.Flow != (shaper.FlowID{})
	})
}

// heldOf is a planned flow's marks and keys as the maps hold them.
func heldOf(f PlannedFlow) flowHave {
	return flowHave{marks: f.Spec.Marks, keys: f.Spec.Keys}
}

// writeSession makes the maps hold sp for session seid over old (its
// entries before): the session, its flows that are new or changed, then
// the flows and session that went. pc's room was checked by the caller.
func (b *Backend) writeSession(pc *edt.Pacer, seid uint64, old map[uint32]PlannedFlow, oldAMBR uint64, had bool, sp sessionPlan, rep *shaper.Report) error {
	sid := uint32(seid)
	if sp.ambr != 0 && (!had || oldAMBR != sp.ambr) {
		var err error
		if had {
			err = pc.SetSessionAMBR(sid, sp.ambr)
		} else {
			err = pc.AddSession(sid, sp.ambr)
		}
		if err != nil {
			return fmt.Errorf("dev %s: %w", b.dev, err)
		}
		rep.Writes++
		rep.Changes = append(rep.Changes, shaper.Change{Op: op(had), Object: "session", Flow: shaper.FlowID{SEID: seid},
			Rate: sp.ambr, Ceil: sp.ambr, Detail: "AMBR " + shaper.FormatRate(sp.ambr)})
	}
	want := map[uint32]bool{}
	for _, f := range sp.flows {
		want[f.ID] = true
		h, ok := old[f.ID]
		if ok && sameSpec(h.Spec, f.Spec) {
			continue
		}
		var held *flowHave
		if ok {
			hv := heldOf(h)
			held = &hv
		}
		if err := b.putFlow(pc, f, held, rep); err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(old)) {
		if want[id] {
			continue
		}
		if err := removeFlow(pc, id, heldOf(old[id])); err != nil {
			return fmt.Errorf("dev %s: %w", b.dev, err)
		}
		rep.Writes++
		rep.Changes = append(rep.Changes, shaper.Change{Op: "delete", Object: "flow", Class: FlowHandle(id), Detail: fmt.Sprintf("flow %#x", id)})
	}
	if had && sp.ambr == 0 {
		if err := pc.RemoveSession(sid); err != nil {
			return fmt.Errorf("dev %s: %w", b.dev, err)
		}
		rep.Writes++
		rep.Changes = append(rep.Changes, shaper.Change{Op: "delete", Object: "session", Flow: shaper.FlowID{SEID: seid}})
	}
	return nil
}

// updateFast is Update through the incremental index: only the given
// sessions are planned and written, the tree only when the GBR sum
// moves. ok is false when the index cannot serve (no index, maps not
// trusted, another policy, a flow without a mark, SDF rules): the caller
// plans everything. After an error the index is stale: the caller marks
// the backend failed, and the next Apply builds it again.
func (b *Backend) updateFast(sessions map[uint64][]shaper.Flow, pol shaper.Policy) (rep shaper.Report, ok bool, err error) {
	in, p := b.inc, b.last
	rep = shaper.Report{Dev: b.dev, Backend: Name, Accounting: accounting(p.Overhead), Overhead: p.Overhead}
	if in == nil || !b.trusted || b.pacer == nil || pol != in.pol || len(b.sdf) > 0 || p.Rules != nil {
		return rep, false, nil
	}
	for _, fs := range sessions {
		for _, f := range fs {
			if f.Mark == 0 {
				return rep, false, nil
			}
		}
	}
	seids := slices.Sorted(maps.Keys(sessions))
	olds := map[uint64]map[uint32]PlannedFlow{}
	for _, seid := range seids {
		olds[seid] = in.release(p, seid)
	}
	plans := map[uint64]sessionPlan{}
	for _, seid := range seids {
		plans[seid] = in.planSession(sessions[seid], olds[seid])
	}
	if err := b.fitsAfter(p, seids, olds, plans); err != nil {
		return rep, true, err
	}
	if err := b.updateTree(p, in, &rep); err != nil {
		return rep, true, err
	}
	for _, seid := range seids {
		oldAMBR, had := p.Sessions[uint32(seid)]
		if err := b.writeSession(b.pacer, seid, olds[seid], oldAMBR, had, plans[seid], &rep); err != nil {
			return rep, true, err
		}
	}
	b.keep(p, in, sessions, olds, plans, &rep)
	return rep, true, nil
}

// fitsAfter refuses, before any write, an update whose sessions or flows
// would not fit in the program's maps (every flow has one mark).
func (b *Backend) fitsAfter(p *Plan, seids []uint64, olds map[uint64]map[uint32]PlannedFlow, plans map[uint64]sessionPlan) error {
	nSess, nFlows := len(p.Sessions), len(p.Flows)
	for _, seid := range seids {
		nFlows += len(plans[seid].flows) - len(olds[seid])
		if _, had := p.Sessions[uint32(seid)]; had {
			nSess--
		}
		if plans[seid].ambr != 0 {
			nSess++
		}
	}
	if err := fitCounts(nSess, nFlows, nFlows, 0, b.pacer.Options()); err != nil {
		return fmt.Errorf("dev %s: %w", b.dev, err)
	}
	return nil
}

// updateTree rewrites the tree when the ledger's GBR sum gives it other
// rates than p's.
func (b *Backend) updateTree(p *Plan, in *incremental, rep *shaper.Report) error {
	classes := tree(in.cpol, in.led.GBRSum(), p.Overhead, p.Room)
	if slices.Equal(classes, p.Classes) {
		return nil
	}
	link, err := b.link()
	if err != nil {
		return err
	}
	root, err := b.readRoot(link)
	if err != nil {
		return err
	}
	np := *p
	np.Classes = classes
	if err := b.writeTree(link, &np, root, rep); err != nil {
		return err
	}
	p.Classes = classes
	return nil
}

// keep makes p, the index and the given flows what the maps now hold,
// and fills the report: the sessions' new flows' classes, the counts.
func (b *Backend) keep(p *Plan, in *incremental, sessions map[uint64][]shaper.Flow, olds map[uint64]map[uint32]PlannedFlow,
	plans map[uint64]sessionPlan, rep *shaper.Report) {
	p.Problems = problemsBut(p.Problems, sessions)
	for seid, fs := range sessions {
		for _, old := range olds[seid] {
			in.remove(p, old.Flow.ID)
		}
		for _, id := range in.bySEID[seid] {
			delete(b.flows, id)
		}
		delete(in.bySEID, seid)
		for _, f := range fs {
			b.flows[f.ID] = f
			in.bySEID[seid] = append(in.bySEID[seid], f.ID)
		}
		sp := plans[seid]
		for _, f := range sp.flows {
			in.add(p, f)
		}
		if sp.ambr != 0 {
			p.Sessions[uint32(seid)] = sp.ambr
		} else {
			delete(p.Sessions, uint32(seid))
		}
		p.Problems = append(p.Problems, sp.problems...)
		rep.Classes = append(rep.Classes, planClasses(&Plan{Flows: sp.flows})...)
	}
	rep.Classes = append(rep.Classes, planClasses(&Plan{Classes: p.Classes})...)
	rep.Problems = p.Problems
	rep.Flows, rep.ClassCount = len(p.Flows), len(p.Classes)
	rep.Summary = fmt.Sprintf("dev %s: edt tree %x: (%d shared classes), %d flows paced, %d sessions; %d writes",
		b.dev, Major, len(p.Classes)-1, len(p.Flows), len(p.Sessions), rep.Writes)
}
