package plan

import (
	"fmt"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/spec"
)

// State is the plan the HTB backend keeps between applies, indexed so
// that a change of one session costs work on that session only
// (Backend.Update). It makes the same decisions Plan would for the same
// flows against the same previous tree (class ids aside: a new class takes
// the lowest free minor when it is placed, where Plan numbers a whole set
// at once), which the property test checks.
//
// It is the plan, in the model's units, not a record of the device: the
// HTB Reconciler keeps its own of what the device holds (its qdiscs, its
// classes in the kernel's units, the classifier's entries), which it
// diffs against and which a plan does not know.
type State struct {
	Pol   Policy // checked (CheckPolicy)
	Major uint16
	Base  Class // burst, cburst, quantum of every class
	// Classes are every planned class by minor.
	Classes MinorTable[Class]
	// input is each session's flows as last given.
	input map[uint64][]shaper.Flow
	// Minor is each admitted flow's class (admittedFlow gives the flow as
	// admitted, from its input and its class).
	Minor map[shaper.FlowID]uint16
	// waiting are flows refused for something that may pass later (no
	// room for their GBR, a key another flow holds, no class id left).
	waiting map[shaper.FlowID]shaper.Flow
	// clamped are admitted flows whose GBR admission cut, as asked: they
	// are admitted again whenever the plan moves, as Plan would.
	clamped  map[shaper.FlowID]shaper.Flow
	problems flowProblems
	// reported is the problem list the last update returned.
	reported problemList
	// listedTwice are the duplicate-flow problems of each session's input.
	listedTwice map[uint64][]shaper.Problem
	policyPr    []shaper.Problem
	sessions    map[uint64]*sessionPlan
	ledger      *shaper.Ledger
	// Spares are the spare classes\' minors, lowest first.
	Spares  []uint16
	used    [1 << 16]bool
	lowFree int
	linkSum shaper.LinkShare
	// Keys warns about a placed flow its classifier cannot reach (the
	// zero KeyCheck: no such warnings).
	Keys KeyCheck
}

// sessionPlan is one session's AMBR class and the flows under it.
type sessionPlan struct {
	Minor uint16
	ambr  uint64
	flows map[shaper.FlowID]bool
	rate  uint64
}

// Delta is what one update changes in the kernel, in the order it is
// written: entries unbound, classes deleted (children first), classes
// created (parents first) and changed, entries bound.
type Delta struct {
	Unbind []spec.Entry
	Del    []uint16
	Create []Class
	Change []Class
	Bind   []spec.Entry
}

func (d *Delta) Empty() bool {
	return len(d.Unbind)+len(d.Del)+len(d.Create)+len(d.Change)+len(d.Bind) == 0
}

// NewState indexes a full plan: t planned from input (by session)
// under pol, with the problems Plan reported. It keeps input's slices
// (the caller hands them over: a copy would cost a Flow per flow, 5 MB at
// 65k flows).
func NewState(t *Tree, input map[uint64][]shaper.Flow, pol Policy, problems []shaper.Problem) (*State, error) {
	pol, _, ok := CheckPolicy(pol)
	if !ok {
		return nil, fmt.Errorf("policy does not check")
	}
	s := &State{Pol: pol, Major: t.Major, Classes: NewMinorTable[Class](MaxMinor(t)), input: map[uint64][]shaper.Flow{},
		Minor: map[shaper.FlowID]uint16{}, waiting: map[shaper.FlowID]shaper.Flow{},
		clamped: map[shaper.FlowID]shaper.Flow{}, listedTwice: map[uint64][]shaper.Problem{},
		problems: newFlowProblems(), sessions: map[uint64]*sessionPlan{}, ledger: shaper.NewLedger(pol.Policy),
		Base: Class{Burst: pol.Burst, CBurst: pol.CBurst, Quantum: pol.Quantum}}
	for seid, fl := range input {
		s.input[seid] = fl
	}
	for _, c := range t.Classes {
		s.Classes.Set(c.Minor, c)
		s.used[c.Minor] = true
		s.linkSum = s.linkSum.Add(s.linkShare(c))
		switch c.Role {
		case shaper.RoleSession:
			s.sessions[c.SEID] = &sessionPlan{Minor: c.Minor, ambr: c.Ceil, rate: c.Rate, flows: map[shaper.FlowID]bool{}}
		case shaper.RoleFlow:
			s.Minor[c.Flow] = c.Minor
		case shaper.RoleSpare:
			s.Spares = append(s.Spares, c.Minor)
		}
	}
	slices.Sort(s.Spares)
	if err := s.indexFlows(); err != nil {
		return nil, err
	}
	s.indexProblems(problems)
	s.lowFree = int(FirstFlowMinor)
	return s, nil
}

// MaxMinor is the highest class minor in t.
func MaxMinor(t *Tree) uint16 {
	var m uint16
	for _, c := range t.Classes {
		m = max(m, c.Minor)
	}
	return m
}

// indexFlows fills the ledger, the clamped flows and the sessions' flows
// from the planned flow classes and the input.
func (s *State) indexFlows() error {
	ids := make([]shaper.FlowID, 0, len(s.Minor))
	for id := range s.Minor {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, shaper.CompareFlowID)
	for _, id := range ids {
		c, _ := s.Classes.Get(s.Minor[id])
		f, ok := s.inputFlow(id)
		if !ok {
			return fmt.Errorf("planned flow %s is not in the input", id)
		}
		asked := f
		f.GBR = c.GBR // as admitted (maybe clamped)
		if _, _, ok := s.ledger.Admit(f); !ok {
			return fmt.Errorf("planned flow %s does not pass admission again", id)
		}
		if f.GBR < asked.GBR {
			s.clamped[id] = asked
		}
		if p, ok := s.Classes.Get(c.Parent); ok && p.Role == shaper.RoleSession {
			s.sessions[p.SEID].flows[id] = true
		}
	}
	return nil
}

// indexProblems keeps the plan's problems by flow, and the flows refused
// for a reason that may pass later.
func (s *State) indexProblems(problems []shaper.Problem) {
	for _, p := range problems {
		if p.Kind == shaper.DuplicateFlow {
			s.listedTwice[p.Flow.SEID] = append(s.listedTwice[p.Flow.SEID], p)
			continue
		}
		if p.Flow == (shaper.FlowID{}) {
			if p.Kind != shaper.Oversubscribed {
				s.policyPr = append(s.policyPr, p)
			}
			continue
		}
		s.problems.add(p.Flow, p)
		if _, in := s.Minor[p.Flow]; !in && p.Severity == shaper.Error && retryable(p.Kind) {
			if f, ok := s.inputFlow(p.Flow); ok {
				s.waiting[p.Flow] = f
			}
		}
	}
}

// admittedFlow returns a placed flow as admission gave it: its input with
// the GBR its class holds (clamped or not; admission changes nothing else).
// Deriving it, rather than keeping a third copy of every flow beside the
// input and the class, saves a Flow and a map entry per flow.
func (s *State) admittedFlow(id shaper.FlowID) (shaper.Flow, bool) {
	m, ok := s.Minor[id]
	if !ok {
		return shaper.Flow{}, false
	}
	f, ok := s.inputFlow(id)
	c, _ := s.Classes.Get(m)
	f.GBR = c.GBR
	return f, ok
}

// inputFlow finds a flow in its session's input: the first listed, the
// one a plan takes (a session holds a handful, so a scan beats an index of
// every flow).
func (s *State) inputFlow(id shaper.FlowID) (shaper.Flow, bool) {
	for _, f := range s.input[id.SEID] {
		if f.ID == id {
			return f, true
		}
	}
	return shaper.Flow{}, false
}

// retryable says whether a refusal may pass once other flows change.
func retryable(k shaper.ProblemKind) bool {
	switch k {
	case shaper.GBRSumAboveLink, shaper.DuplicateMark, shaper.DuplicateTEID, shaper.TooManyFlows:
		return true
	}
	return false
}

// linkShare is what a class takes of the link's rate (the link class and
// the flows under a session take nothing of it directly).
func (s *State) linkShare(c Class) shaper.LinkShare {
	switch {
	case c.Role == shaper.RoleLink, c.Role == shaper.RoleSpare:
		return shaper.LinkShare{}
	case c.Parent == LinkMinor:
		return classShare(s.Pol, c)
	}
	return shaper.LinkShare{}
}

// classShare files a class under the link by kind: the default class, a
// GBR flow's (aware mode), a static rate, or a non-GBR minimum (a non-GBR
// flow's class or a session's).
func classShare(pol Policy, c Class) shaper.LinkShare {
	switch {
	case c.Role == shaper.RoleDefault:
		return shaper.LinkShare{Default: c.Rate}
	case pol.Mode == shaper.Static:
		return shaper.LinkShare{Static: c.Rate}
	case c.Role == shaper.RoleFlow && c.GBR != 0:
		return shaper.LinkShare{GBR: c.Rate}
	}
	return shaper.LinkShare{NonGBR: c.Rate}
}
