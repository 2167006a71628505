package plan

import (
	"slices"

	"github.com/free5gc/gtpqos/shaper"
)

// A periodic resync hands Apply the flows the kept plan already holds: the
// daemon's events keep both in step, and what may have drifted is the
// kernel's tree. Planning every flow again would only make the kept plan
// anew (at 65k flows most of a resync's time, and a second copy of the
// plan in memory while it runs), so Apply reconciles the device to the
// kept plan's tree instead. Anything else (other flows, another policy, a
// device whose packet overhead changed, a classifier of another kind)
// takes a full plan.

// SameInput reports whether flows are the kept plan's input: sessions in
// ascending SEID order, each session's flows in one run, in the order they
// were last given (the engine lists flows by id, and a session keeps its
// flows in id order). Ascending SEIDs make a session listed twice, or one
// listed twice in place of another, a difference and not a match; flows in
// any other order take a full plan, which is right, only slower.
func (s *State) SameInput(flows []shaper.Flow) bool {
	sessions := 0
	for i := 0; i < len(flows); {
		seid := flows[i].ID.SEID
		if i > 0 && seid <= flows[i-1].ID.SEID {
			return false
		}
		j := i + 1
		for j < len(flows) && flows[j].ID.SEID == seid {
			j++
		}
		if !slices.Equal(flows[i:j], s.input[seid]) {
			return false
		}
		sessions++
		i = j
	}
	return sessions == len(s.input)
}

// Desired is the kept plan as a tree with the header a plan under the kept
// policy makes (Header), classes sorted by minor.
func (s *State) Desired() *Tree {
	t := Header(s.Pol)
	t.Classes = make([]Class, 0, s.Classes.Len())
	for _, c := range s.Classes.All() {
		t.Classes = append(t.Classes, c)
	}
	return t
}

// SetDeviceProblems replaces the device's warnings (down, no carrier)
// among the policy's problems.
func (s *State) SetDeviceProblems(ps []shaper.Problem) {
	kept := slices.DeleteFunc(slices.Clone(s.policyPr), func(p shaper.Problem) bool { return p.Kind == shaper.DeviceDown })
	kept = append(kept, ps...)
	if !slices.Equal(kept, s.policyPr) {
		s.policyPr = kept
		s.problems.gen++
	}
}
