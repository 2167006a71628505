package edtbackend

import (
	"fmt"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// heldGBR is what the program's maps hold, as admission needs it: the
// GBR given to the flow that holds each mark and each (TEID, QFI) key.
// Admitting the flows that keep what they hold first (shaper.Admit's
// ranks, as the HTB backend does) makes a full apply, a resync or a
// restart refuse the same flow the events did when the GBRs do not all
// fit: never one that holds its guarantee, in favour of a newcomer with a
// lower FlowID. A mark or key two flows ask for stays with the flow that
// holds it, where the holder's FlowID is known (the last plan; the maps
// hold no FlowIDs, so after a restart FlowID order decides between them).
type heldGBR struct {
	byMark map[uint32]holder
	byKey  map[edt.Key]holder
}

// holder is the flow that holds a mark or key: the GBR it was given and
// its FlowID (zero: not known).
type holder struct {
	gbr uint64
	id  shaper.FlowID
}

func newHeldGBR() *heldGBR {
	return &heldGBR{byMark: map[uint32]holder{}, byKey: map[edt.Key]holder{}}
}

// add records one held flow's spec, and its FlowID when known.
func (h *heldGBR) add(s edt.FlowSpec, id shaper.FlowID) {
	for _, m := range s.Marks {
		h.byMark[m] = holder{gbr: s.GBR, id: id}
	}
	for _, k := range s.Keys {
		h.byKey[k] = holder{gbr: s.GBR, id: id}
	}
}

// rank is f's admission rank: new when no flow holds its mark (or, without
// one, its (TEID, QFI)), or another flow is known to; grown when it asks
// for more GBR than the maps give it; else kept.
func (h *heldGBR) rank(f *shaper.Flow) int {
	var c holder
	var ok bool
	if f.Mark != 0 {
		c, ok = h.byMark[f.Mark]
	} else {
		c, ok = h.byKey[edt.Key{TEID: f.TEID, QFI: f.QFI}]
	}
	switch {
	case !ok || c.id != (shaper.FlowID{}) && c.id != f.ID:
		return shaper.AdmitNew
	case f.GBR > c.gbr:
		return shaper.AdmitGrown
	}
	return shaper.AdmitKept
}

// orderMatters reports whether admission refused or clamped a flow for
// what others took first (a GBR that did not fit, a mark or key already
// admitted): only then does the order, and so what the maps hold, change
// the plan.
func orderMatters(ps []shaper.Problem) bool {
	return slices.ContainsFunc(ps, func(p shaper.Problem) bool {
		switch p.Kind {
		case shaper.GBRSumAboveLink, shaper.DuplicateMark, shaper.DuplicateTEID:
			return true
		case shaper.Clamped:
			return p.Field == "gbr"
		}
		return false
	})
}

// heldForAdmission is what the maps hold: the last plan written when it is
// trusted, else the pinned program's flows (none when there is no program,
// or one of an older layout, whose maps a new program replaces).
func (b *Backend) heldForAdmission() (*heldGBR, error) {
	h := newHeldGBR()
	if b.trusted && b.last != nil {
		for _, f := range b.last.Flows {
			h.add(f.Spec, f.Flow.ID)
		}
		return h, nil
	}
	pc, err := b.adopt()
	if err != nil || pc == nil || !pc.Current() {
		return h, err
	}
	infos, err := pc.ReadFlows()
	if err != nil {
		return nil, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	for _, fi := range infos {
		h.add(fi.Spec, shaper.FlowID{})
	}
	return h, nil
}

// planApply is MakePlan for a device: when admission's order decides what
// it refuses, the flows the maps hold are admitted first.
func (b *Backend) planApply(flows []shaper.Flow, pol shaper.Policy) (*Plan, error) {
	p := MakePlan(flows, pol)
	if p.Classes == nil || !orderMatters(p.Problems) {
		return p, nil
	}
	h, err := b.heldForAdmission()
	if err != nil {
		return nil, err
	}
	return makePlan(flows, pol, h.rank), nil
}
