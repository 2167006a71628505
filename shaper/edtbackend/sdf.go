package edtbackend

import (
	"fmt"
	"maps"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/bpf"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// planRules gives p the program's SDF rule table on a downlink device:
// TEID -> the session's SDF rules (qosview.SDFRules), each rule valued in
// the id of its flow in p (0: a flow p does not pace, the default class),
// the table the gtpu classifier builds with class ids. It returns what
// bpf.CompileSDF noted (TEIDs left to (TEID, QFI)).
func planRules(p *Plan, rules []shaper.SessionRules) []string {
	p.Rules = nil
	if len(rules) == 0 {
		return nil
	}
	ids := make(map[shaper.FlowID]uint32, len(p.Flows))
	for _, f := range p.Flows {
		if f.Flow.Direction == shaper.Downlink {
			ids[f.Flow.ID] = f.ID
		}
	}
	rs, notes := bpf.CompileSDF(rules, shaper.Downlink, func(id shaper.FlowID) uint32 {
		if id == (shaper.FlowID{}) {
			return 0
		}
		return ids[id]
	})
	if len(rs) > 0 {
		p.Rules = rs
	}
	return notes
}

// syncRules makes the rules map hold want over have (what it holds),
// deleting stale TEIDs first.
func (b *Backend) syncRules(pc *edt.Pacer, have, want map[uint32]edt.Rules, rep *shaper.Report) error {
	for _, teid := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[teid]; ok {
			continue
		}
		if err := pc.RemoveRules(teid); err != nil {
			return fmt.Errorf("dev %s: %w", b.dev, err)
		}
		rep.Writes++
		rep.Changes = append(rep.Changes, shaper.Change{Op: "delete", Object: "sdf", Detail: fmt.Sprintf("SDF rules of TEID %d", teid)})
	}
	for _, teid := range slices.Sorted(maps.Keys(want)) {
		old, ok := have[teid]
		if ok && old == want[teid] {
			continue
		}
		if err := pc.SetRules(teid, want[teid]); err != nil {
			return fmt.Errorf("dev %s: %w", b.dev, err)
		}
		rep.Writes++
		rep.Changes = append(rep.Changes, shaper.Change{Op: op(ok), Object: "sdf", Detail: fmt.Sprintf("%d SDF rules of TEID %d", want[teid].N, teid)})
	}
	return nil
}

// heldRules is what the rules map holds: the last plan's when trusted,
// else read back.
func (b *Backend) heldRules(pc *edt.Pacer, fresh bool) (map[uint32]edt.Rules, error) {
	if fresh {
		return nil, nil
	}
	if b.trusted && b.last != nil && b.pacer == pc {
		return b.last.Rules, nil
	}
	rs, err := pc.ReadRules()
	if err != nil {
		return nil, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	return rs, nil
}

// SetSDF gives the backend the sessions' SDF rules (qosview.SDFRules), so
// that on stock gtp5g the program finds each downlink packet's flow by the
// first rule its inner packet matches, whatever QFI gtp5g wrote. Every
// Apply plans the rules with its flows; after a successful one the rules
// map changes at once, against the last plan's flows. It returns the
// rules' notes (TEIDs left to (TEID, QFI)).
func (b *Backend) SetSDF(rules []shaper.SessionRules) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sdf = slices.Clone(rules)
	if b.opt.Direction != shaper.Downlink || b.pacer == nil || b.last == nil || b.failed {
		return nil, nil
	}
	p := *b.last
	notes := planRules(&p, b.sdf)
	if err := fits(&p, b.pacer.Options()); err != nil {
		return notes, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	have, err := b.heldRules(b.pacer, false)
	if err != nil {
		return notes, err
	}
	var rep shaper.Report
	if err := b.syncRules(b.pacer, have, p.Rules, &rep); err != nil {
		b.trusted = false
		return notes, err
	}
	b.last.Rules = p.Rules
	return notes, nil
}
