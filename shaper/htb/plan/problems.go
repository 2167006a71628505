package plan

import (
	"maps"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
)

// flowProblems are the plan's problems by flow. Only flows with problems
// have an entry, and gen moves whenever an entry does, so an update that
// leaves every problem as it was reports them without walking them: on a
// tree where thousands of flows carry a warning, an event costs the same
// as on one where none do.
type flowProblems struct {
	byFlow map[shaper.FlowID][]shaper.Problem
	gen    uint64
}

func newFlowProblems() flowProblems {
	return flowProblems{byFlow: map[shaper.FlowID][]shaper.Problem{}}
}

// of returns a flow's problems (the slice is the set's own).
func (p *flowProblems) of(id shaper.FlowID) []shaper.Problem { return p.byFlow[id] }

// add appends problems to a flow's.
func (p *flowProblems) add(id shaper.FlowID, ps ...shaper.Problem) {
	if len(ps) == 0 {
		return
	}
	p.byFlow[id] = append(p.byFlow[id], ps...)
	p.gen++
}

// drop forgets a flow's problems.
func (p *flowProblems) drop(id shaper.FlowID) {
	if _, ok := p.byFlow[id]; ok {
		delete(p.byFlow, id)
		p.gen++
	}
}

// dropKind removes a flow's problems of one kind.
func (p *flowProblems) dropKind(id shaper.FlowID, kind shaper.ProblemKind) {
	ps := p.byFlow[id]
	kept := slices.DeleteFunc(slices.Clone(ps), func(q shaper.Problem) bool { return q.Kind == kind })
	switch {
	case len(kept) == len(ps):
		return
	case len(kept) == 0:
		delete(p.byFlow, id)
	default:
		p.byFlow[id] = kept
	}
	p.gen++
}

// problemList is the list an update reports, rebuilt only when a problem
// moved since the last one.
type problemList struct {
	list []shaper.Problem
	// gen is the flowProblems generation and over the oversubscription
	// warning the list was made with.
	gen  uint64
	over shaper.Problem
	made bool
}

// AllProblems returns the plan's current problems, per flow in FlowID
// order, then the policy's, with the oversubscription warning recomputed;
// same says they are the list the last call returned (the same slice, not
// to be modified).
func (s *State) AllProblems() (list []shaper.Problem, same bool) {
	over, _ := s.linkSum.Oversubscribed(s.Pol.LinkRate)
	r := &s.reported
	if r.made && r.gen == s.problems.gen && r.over == over {
		return r.list, true
	}
	ids := slices.SortedFunc(maps.Keys(s.problems.byFlow), shaper.CompareFlowID)
	var out []shaper.Problem
	for _, id := range ids {
		out = append(out, s.problems.byFlow[id]...)
	}
	for _, seid := range slices.Sorted(maps.Keys(s.listedTwice)) {
		out = append(out, s.listedTwice[seid]...)
	}
	out = append(out, s.policyPr...)
	if over != (shaper.Problem{}) {
		out = append(out, over)
	}
	*r = problemList{list: out, gen: s.problems.gen, over: over, made: true}
	return out, false
}

// setListedTwice replaces one session's duplicate-flow problems.
func (s *State) setListedTwice(seid uint64, ps []shaper.Problem) {
	if slices.Equal(s.listedTwice[seid], ps) {
		return
	}
	if len(ps) == 0 {
		delete(s.listedTwice, seid)
	} else {
		s.listedTwice[seid] = ps
	}
	s.problems.gen++
}
