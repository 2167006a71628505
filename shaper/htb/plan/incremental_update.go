package plan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
)

// update is one State.Apply in progress.
type update struct {
	s *State
	d *Delta
	// freed are the classes of flows dropped in this update, by flow: the
	// same flow placed again under the same parent keeps its minor.
	freed map[shaper.FlowID]Class
	// recyclable are freed classes whose flows left for good, by parent:
	// a new flow under the same parent takes one (a change, not a
	// delete and a create).
	recyclable map[uint16][]Class
	// freedSessions are session classes emptied in this update.
	freedSessions []Class
	touched       map[uint64]bool
	createSess    []Class
	createFlows   []Class
}

// candidate is a flow to admit, with its admission rank (shaper.Admit).
type candidate struct {
	f    shaper.Flow
	rank int
}

// Apply replaces the given sessions' flows (an empty list: the session is
// gone) and returns what to write.
func (s *State) Apply(changes map[uint64][]shaper.Flow) *Delta {
	u := &update{s: s, d: &Delta{}, freed: map[shaper.FlowID]Class{}, touched: map[uint64]bool{}}
	var cands []candidate
	for _, seid := range slices.Sorted(maps.Keys(changes)) {
		cands = append(cands, u.replace(seid, changes[seid])...)
	}
	cands = append(cands, u.retries(len(cands) > 0)...)
	u.collectRecyclable(cands)
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		return shaper.CompareFlowID(a.f.ID, b.f.ID)
	})
	for _, c := range cands {
		u.place(c.f)
	}
	u.fixSessions()
	u.finish()
	return u.d
}

// replace swaps one session's flows: flows that left or changed are
// dropped, flows that are new or changed become candidates.
func (u *update) replace(seid uint64, next []shaper.Flow) []candidate {
	s := u.s
	old := map[shaper.FlowID]shaper.Flow{}
	for _, f := range s.input[seid] {
		old[f.ID] = f
	}
	var cands []candidate
	seen := map[shaper.FlowID]bool{}
	var twice []shaper.Problem
	for _, g := range next {
		if seen[g.ID] {
			twice = append(twice, shaper.Problem{Kind: shaper.DuplicateFlow, Severity: shaper.Error,
				Flow: g.ID, Name: g.Label(), Field: "id", Detail: fmt.Sprintf("flow %s listed twice", g.ID)})
			continue
		}
		seen[g.ID] = true
		if f, was := old[g.ID]; was && f == g {
			continue
		}
		cands = append(cands, candidate{f: g, rank: u.rankOf(g)})
		u.drop(g.ID)
	}
	for id := range old {
		if !seen[id] {
			u.drop(id)
		}
	}
	s.setListedTwice(seid, twice)
	if len(next) == 0 {
		delete(s.input, seid)
	} else {
		s.input[seid] = slices.Clone(next)
	}
	return cands
}

// rankOf is a changed or new flow's admission rank: kept when it holds a
// class with the same keys and asks for no more GBR than it was given.
func (u *update) rankOf(g shaper.Flow) int {
	f, ok := u.s.admittedFlow(g.ID)
	switch {
	case !ok:
		return shaper.AdmitNew
	case g.GBR > f.GBR || g.Mark != f.Mark || g.TEID != f.TEID || g.QFI != f.QFI:
		return shaper.AdmitGrown
	}
	return shaper.AdmitKept
}

// retries returns the flows to admit again: waiting ones (something may
// have made room) and, when anything moved, clamped ones (they may get
// more), each dropped first.
func (u *update) retries(moved bool) []candidate {
	s := u.s
	var out []candidate
	for id, f := range s.waiting {
		out = append(out, candidate{f: f, rank: shaper.AdmitNew})
		s.problems.drop(id)
	}
	clear(s.waiting)
	if !moved && len(u.freed) == 0 && len(out) == 0 {
		return nil
	}
	for _, id := range slices.SortedFunc(maps.Keys(s.clamped), shaper.CompareFlowID) {
		f := s.clamped[id]
		out = append(out, candidate{f: f, rank: shaper.AdmitGrown})
		u.drop(id)
	}
	return out
}

// drop takes a flow out of the plan: its admission, its class (kept aside
// for reuse by the same flow in this update) and its problems.
func (u *update) drop(id shaper.FlowID) {
	s := u.s
	delete(s.waiting, id)
	s.problems.drop(id)
	delete(s.clamped, id)
	m, ok := s.Minor[id]
	if !ok {
		return
	}
	c, _ := s.Classes.Get(m)
	f, _ := s.admittedFlow(id)
	s.ledger.Release(f)
	delete(s.Minor, id)
	s.Classes.Del(m)
	s.linkSum = s.linkSum.Sub(s.linkShare(c))
	u.freed[id] = c
	if p, ok := s.sessionOfClass(c); ok {
		delete(p.flows, id)
		u.touched[c.SEID] = true
	}
}

// sessionOfClass returns the session plan whose class is c's parent.
func (s *State) sessionOfClass(c Class) (*sessionPlan, bool) {
	sp := s.sessions[c.SEID]
	if sp == nil || sp.Minor != c.Parent {
		return nil, false
	}
	return sp, true
}

// place admits one candidate and gives it a class: its old one when it
// stays under the same parent, else the lowest free minor.
func (u *update) place(f shaper.Flow) {
	s := u.s
	ps, ok := CheckFlow(&f, &s.Pol)
	s.problems.add(f.ID, ps...)
	if !ok {
		return
	}
	g, ps, ok := s.ledger.Admit(f)
	s.problems.add(f.ID, ps...)
	if !ok {
		u.wait(f)
		return
	}
	parent, ambr, ok := u.parentFor(g)
	if !ok {
		s.ledger.Release(g)
		u.wait(f)
		return
	}
	old, had := u.freed[g.ID]
	if !had || old.Parent != parent {
		old, had = u.recycle(parent)
	}
	if !had && parent == LinkMinor && len(s.Spares) > 0 {
		old, had = s.Classes.Get(s.Spares[0]) // a change, not a create
		s.Spares = s.Spares[1:]
	}
	minor := old.Minor
	if !had {
		if minor, ok = s.Alloc(); !ok {
			s.ledger.Release(g)
			s.problems.add(f.ID, tooMany(&f))
			u.wait(f)
			return
		}
	}
	c := s.flowClass(g, minor, parent, ambr)
	s.Classes.Set(c.Minor, c)
	s.Minor[g.ID] = minor
	if g.GBR < f.GBR {
		s.clamped[g.ID] = f
	}
	s.linkSum = s.linkSum.Add(s.linkShare(c))
	if p, ok := s.Keys.Unreachable(s.Major, c); ok {
		s.problems.add(g.ID, p)
	}
	if parent != LinkMinor {
		s.sessions[g.ID.SEID].flows[g.ID] = true
		u.touched[g.ID.SEID] = true
	}
	u.written(c, old, had)
}

// collectRecyclable sets aside the freed classes no candidate will take
// back (their flows left for good).
func (u *update) collectRecyclable(cands []candidate) {
	back := make(map[shaper.FlowID]bool, len(cands))
	for _, c := range cands {
		back[c.f.ID] = true
	}
	u.recyclable = map[uint16][]Class{}
	for _, id := range slices.SortedFunc(maps.Keys(u.freed), shaper.CompareFlowID) {
		if c := u.freed[id]; !back[id] {
			u.recyclable[c.Parent] = append(u.recyclable[c.Parent], c)
		}
	}
}

// recycle takes a freed class under parent for a new flow.
func (u *update) recycle(parent uint16) (Class, bool) {
	list := u.recyclable[parent]
	for len(list) > 0 {
		c := list[0]
		list = list[1:]
		u.recyclable[parent] = list
		if _, still := u.freed[c.Flow]; still {
			return c, true
		}
	}
	return Class{}, false
}

// wait keeps a refused flow to retry when its refusal is one that may pass.
func (u *update) wait(f shaper.Flow) {
	for _, p := range u.s.problems.of(f.ID) {
		if p.Severity == shaper.Error && retryable(p.Kind) {
			u.s.waiting[f.ID] = f
			return
		}
	}
}

func tooMany(f *shaper.Flow) shaper.Problem {
	return shaper.Problem{Kind: shaper.TooManyFlows, Severity: shaper.Error, Flow: f.ID, Name: f.Label(), Field: "id",
		Detail: fmt.Sprintf("no class id left (max %d classes)", MaxClasses)}
}

// written records a placed flow class in the delta: a reused class is
// changed where it differs and rebound where its key differs; a new one is
// created and bound.
func (u *update) written(c, old Class, reused bool) {
	if !reused {
		u.createFlows = append(u.createFlows, c)
		u.Bind(c)
		return
	}
	delete(u.freed, old.Flow)
	if !sameClass(c, old) {
		u.d.Change = append(u.d.Change, c)
	}
	if c.Key() != old.Key() {
		u.Unbind(old)
		u.Bind(c)
	}
}

// sameClass compares what the kernel holds of two classes (and of their
// FIFO leaves).
func sameClass(a, b Class) bool {
	return a.Parent == b.Parent && a.Rate == b.Rate && a.Ceil == b.Ceil && a.Burst == b.Burst && a.CBurst == b.CBurst &&
		a.Quantum == b.Quantum && a.Prio == b.Prio && a.QueueLimit == b.QueueLimit
}

func (u *update) Bind(c Class) {
	if c.Key() != (shaper.Key{}) {
		u.d.Bind = append(u.d.Bind, c.entry(u.s.Major))
	}
}

func (u *update) Unbind(c Class) {
	if c.Key() != (shaper.Key{}) {
		u.d.Unbind = append(u.d.Unbind, c.entry(u.s.Major))
	}
}
