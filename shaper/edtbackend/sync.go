package edtbackend

import (
	"fmt"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// flowHave is one flow the maps hold: its marks, its (TEID, QFI) keys and
// whether its configuration is a given spec's.
type flowHave struct {
	marks   []uint32
	keys    []edt.Key
	matches func(id uint32, s edt.FlowSpec) bool
}

// held is what the maps hold: read back from them, or, when trusted, the
// last plan written.
func (b *Backend) held(p *edt.Pacer, fresh bool) (map[uint32]flowHave, map[uint32]uint64, error) {
	flows := map[uint32]flowHave{}
	if fresh {
		return flows, map[uint32]uint64{}, nil
	}
	if b.trusted && b.last != nil && b.pacer == p {
		for _, f := range b.last.Flows {
			spec := f.Spec
			flows[f.ID] = flowHave{marks: spec.Marks, keys: spec.Keys, matches: func(_ uint32, s edt.FlowSpec) bool { return sameSpec(spec, s) }}
		}
		return flows, b.last.Sessions, nil
	}
	infos, err := p.ReadFlows()
	if err != nil {
		return nil, nil, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	for id, fi := range infos {
		flows[id] = flowHave{marks: fi.Spec.Marks, keys: fi.Spec.Keys, matches: fi.Matches}
	}
	sess, err := p.ReadSessions()
	if err != nil {
		return nil, nil, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	return flows, sess, nil
}

// sameSpec compares two flow specs as the maps would hold them.
func sameSpec(a, b edt.FlowSpec) bool {
	am, bm := slices.Clone(a.Marks), slices.Clone(b.Marks)
	slices.Sort(am)
	slices.Sort(bm)
	keys := edt.SameKeys(a.Keys, b.Keys)
	a.Marks, b.Marks, a.Keys, b.Keys = nil, nil, nil, nil
	return slices.Equal(am, bm) && keys && a.Session == b.Session && a.GBR == b.GBR && a.MBR == b.MBR && a.DelayBudget == b.DelayBudget &&
		a.GBRBurst == b.GBRBurst && a.Class == b.Class && a.GBRClass == b.GBRClass && a.Hash == b.Hash
}

// syncMaps writes p's sessions and flows into the program's maps over
// what they hold, the fewest writes: sessions first (a flow names its
// session), flows, then the sessions no flow names any more. A changed
// flow is removed and added again (its clocks start over).
func (b *Backend) syncMaps(pc *edt.Pacer, fresh bool, p *Plan, rep *shaper.Report) error {
	haveFlows, haveSess, err := b.held(pc, fresh)
	if err != nil {
		return err
	}
	for id, ambr := range p.Sessions {
		old, ok := haveSess[id]
		switch {
		case !ok:
			err = pc.AddSession(id, ambr)
		case old != ambr:
			err = pc.SetSessionAMBR(id, ambr)
		default:
			continue
		}
		if err != nil {
			return fmt.Errorf("dev %s: %w", b.dev, err)
		}
		rep.Writes++
		rep.Changes = append(rep.Changes, shaper.Change{Op: op(ok), Object: "session", Flow: shaper.FlowID{SEID: uint64(id)},
			Rate: ambr, Ceil: ambr, Detail: "AMBR " + shaper.FormatRate(ambr)})
	}
	want := map[uint32]bool{}
	for _, f := range p.Flows {
		want[f.ID] = true
		h, ok := haveFlows[f.ID]
		if ok && h.matches(f.ID, f.Spec) {
			continue
		}
		var held *flowHave
		if ok {
			held = &h
		}
		if err := b.putFlow(pc, f, held, rep); err != nil {
			return err
		}
	}
	// The rules name flow ids: written once their flows are, changed
	// before a flow they named goes.
	haveRules, err := b.heldRules(pc, fresh)
	if err != nil {
		return err
	}
	if err := b.syncRules(pc, haveRules, p.Rules, rep); err != nil {
		return err
	}
	for id, h := range haveFlows {
		if want[id] {
			continue
		}
		if err := removeFlow(pc, id, h); err != nil {
			return fmt.Errorf("dev %s: %w", b.dev, err)
		}
		rep.Writes++
		rep.Changes = append(rep.Changes, shaper.Change{Op: "delete", Object: "flow", Class: FlowHandle(id), Detail: fmt.Sprintf("flow %#x", id)})
	}
	for id := range haveSess {
		if _, ok := p.Sessions[id]; ok {
			continue
		}
		if err := pc.RemoveSession(id); err != nil {
			return fmt.Errorf("dev %s: %w", b.dev, err)
		}
		rep.Writes++
		rep.Changes = append(rep.Changes, shaper.Change{Op: "delete", Object: "session", Flow: shaper.FlowID{SEID: uint64(id)}})
	}
	return b.syncDefault(pc, rep)
}

// putFlow writes f, over held (what the maps hold under its id; nil:
// nothing), which it removes first: a changed flow starts its clocks
// again.
func (b *Backend) putFlow(pc *edt.Pacer, f PlannedFlow, held *flowHave, rep *shaper.Report) error {
	if held != nil {
		if err := removeFlow(pc, f.ID, *held); err != nil {
			return fmt.Errorf("dev %s: %w", b.dev, err)
		}
		rep.Writes++
	}
	if err := pc.AddFlow(f.ID, f.Spec); err != nil {
		return fmt.Errorf("dev %s: %s: %w", b.dev, f.Flow.Label(), err)
	}
	rep.Writes++
	rep.Changes = append(rep.Changes, flowChange(op(held != nil), f))
	return nil
}

// removeFlow deletes a flow's keys and marks, then the flow.
func removeFlow(pc *edt.Pacer, id uint32, h flowHave) error {
	if err := pc.RemoveKeys(id, h.keys...); err != nil {
		return err
	}
	return pc.RemoveFlow(id, h.marks...)
}

// syncDefault points unknown marks at the default class.
func (b *Backend) syncDefault(pc *edt.Pacer, rep *shaper.Report) error {
	if d, err := pc.DefaultClass(); err == nil && d == ClassID(MinorDefault) {
		return nil
	}
	if err := pc.SetDefaultClass(ClassID(MinorDefault)); err != nil {
		return fmt.Errorf("dev %s: %w", b.dev, err)
	}
	rep.Writes++
	return nil
}

func op(existed bool) string {
	if existed {
		return "change"
	}
	return "add"
}

// flowChange describes a flow's map write.
func flowChange(op string, f PlannedFlow) shaper.Change {
	d := "flow MBR " + shaper.FormatRate(f.Spec.MBR)
	if f.Spec.GBR > 0 {
		d += " GBR " + shaper.FormatRate(f.Spec.GBR)
	}
	if f.Spec.Session != 0 {
		d += fmt.Sprintf(" session %d", f.Spec.Session)
	}
	return shaper.Change{Op: op, Object: "flow", Class: FlowHandle(f.ID), Role: shaper.RoleFlow, Flow: f.Flow.ID, Name: f.Flow.Name,
		QFI: f.Flow.QFI, Rate: f.Spec.GBR, Ceil: f.Spec.MBR, Detail: d}
}
