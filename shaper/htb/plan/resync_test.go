package plan

import (
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

func TestKeptPlanSameInput(t *testing.T) {
	a, b1, b2, c := updateFlow(1, 1, 1, 0), updateFlow(2, 1, 0, 0), updateFlow(2, 2, 0, 0), updateFlow(3, 1, 0, 0)
	s := &State{input: map[uint64][]shaper.Flow{1: {a}, 2: {b1, b2}, 3: {c}}}
	for _, c := range []struct {
		flows []shaper.Flow
		same  bool
	}{
		{[]shaper.Flow{a, b1, b2, c}, true},
		{[]shaper.Flow{b1, b2, a, c}, false},      // sessions out of order: a full plan
		{[]shaper.Flow{a, b2, b1, c}, false},      // a session's flows in another order
		{[]shaper.Flow{b1, a, b2, c}, false},      // a session split in two runs
		{[]shaper.Flow{a, b1, b2, a}, false},      // a session twice, one missing
		{[]shaper.Flow{a, b1, b2, b1, b2}, false}, // as many runs as sessions, one missing
		{[]shaper.Flow{a, b1, b2}, false},
		{[]shaper.Flow{a, b1, b2, c, updateFlow(4, 1, 0, 0)}, false},
		{nil, false},
	} {
		if got := s.SameInput(c.flows); got != c.same {
			t.Errorf("sameInput(%v) = %v, want %v", c.flows, got, c.same)
		}
	}
}
