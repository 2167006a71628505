package plan

import (
	"sort"

	"github.com/free5gc/gtpqos/shaper"
)

// rateKey is a class's rate and ceil in the kernel's bytes/s, how a
// class's contract reads back from the kernel.
type rateKey [2]uint64

func classRates(c Class) rateKey { return rateKey{c.Rate / 8, c.Ceil / 8} }

// distrustBindings re-matches the flows whose match in a tree read from
// the kernel contradicts their contract. The kernel knows no flow ids, so
// such a tree matches flows to classes by the classifier's bindings; if a
// binding was changed behind gtpqos's back (two marks swapped), trusting
// it would plan each flow into the other's class and change both classes'
// rates, mixing their counters. The class's rate and ceil are a second,
// independent record of whose class it is: a flow whose bound class does
// not carry its rate and ceil, while a class no flow is soundly matched to
// carries exactly them, takes that class, and the classifier's sync then
// repairs the binding. A flow with no such class keeps its bound class
// (its contract changed: the class is changed in place); one whose bound
// class another flow took gets a fresh class id. A flow bound to no class
// (its entry, or the whole classifier, removed) likewise takes a class
// that carries exactly its contract, before a spare or a fresh class id.
// The pool's spare classes are never candidates: their rate is the spare
// rate, and Actual reads them as spares.
func (p *planner) distrustBindings() {
	n := len(p.adm.Flows)
	want := make([]rateKey, n)
	trusted := map[uint16]bool{}
	var suspects []int
	for i := 0; i < n; i++ {
		if p.had[i] && p.prev[i].Flow != (shaper.FlowID{}) {
			// A planned tree: matched by flow id, nothing to doubt.
			trusted[p.prev[i].Minor] = true
			continue
		}
		var ambr uint64
		if s := p.adm.SessionOf[i]; s >= 0 {
			ambr = p.adm.Sessions[s].AMBR
		}
		r, c := p.Pol.FlowRates(p.adm.Flows[i], ambr)
		want[i] = rateKey{r / 8, c / 8}
		if p.had[i] && classRates(p.prev[i]) == want[i] {
			trusted[p.prev[i].Minor] = true
			continue
		}
		suspects = append(suspects, i)
	}
	if len(suspects) == 0 {
		return
	}
	free := map[rateKey][]Class{}
	for _, c := range p.ix.Classes {
		if c.Role == shaper.RoleFlow && c.Flow == (shaper.FlowID{}) && !trusted[c.Minor] {
			free[classRates(*c)] = append(free[classRates(*c)], *c)
		}
	}
	for k := range free {
		sort.Slice(free[k], func(a, b int) bool { return free[k][a].Minor < free[k][b].Minor })
	}
	taken := map[uint16]bool{}
	var kept []int
	for _, i := range suspects {
		if cs := free[want[i]]; len(cs) > 0 {
			p.prev[i], p.had[i], free[want[i]] = cs[0], true, cs[1:]
			taken[cs[0].Minor] = true
			continue
		}
		kept = append(kept, i)
	}
	for _, i := range kept {
		p.had[i] = p.had[i] && !taken[p.prev[i].Minor]
	}
}
