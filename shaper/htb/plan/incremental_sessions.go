package plan

import (
	"fmt"
	"maps"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
)

// parentFor returns the class an admitted flow goes under: its session's
// AMBR class for a non-GBR flow with a session AMBR (aware mode), created
// when the session has none, else the link class.
func (u *update) parentFor(g shaper.Flow) (parent uint16, ambr uint64, ok bool) {
	s := u.s
	if s.Pol.Mode != shaper.Aware || g.GBR != 0 || g.SessionAMBR == 0 {
		return LinkMinor, 0, true
	}
	sp := s.sessions[g.ID.SEID]
	if sp == nil {
		m, ok := s.Alloc()
		if !ok {
			s.problems.add(g.ID, shaper.Problem{Kind: shaper.TooManyFlows, Severity: shaper.Error, Flow: g.ID,
				Name: g.Label(), Field: "id", Detail: sessionFull(g.ID.SEID, 0)})
			return 0, 0, false
		}
		sp = &sessionPlan{Minor: m, ambr: min(g.SessionAMBR, s.Pol.LinkRate), flows: map[shaper.FlowID]bool{}}
		s.sessions[g.ID.SEID] = sp
		c := s.Base
		c.Minor, c.Parent, c.Role, c.Prio, c.SEID, c.Ceil = m, LinkMinor, shaper.RoleSession, s.Pol.Prio, g.ID.SEID, sp.ambr
		s.Classes.Set(c.Minor, c)
		u.createSess = append(u.createSess, c)
	}
	u.touched[g.ID.SEID] = true
	return sp.Minor, sp.ambr, true
}

// flowClass is an admitted flow's class (Plan's rates and ceilings).
func (s *State) flowClass(g shaper.Flow, minor, parent uint16, ambr uint64) Class {
	c := s.Base
	c.Minor, c.Parent, c.Role, c.Prio = minor, parent, shaper.RoleFlow, s.Pol.Prio
	c.Flow, c.Name, c.Direction, c.Mark, c.TEID, c.QFI = g.ID, g.Name, g.Direction, g.Mark, g.TEID, g.QFI
	c.GBR, c.MBR, c.SEID = g.GBR, g.MBR, g.ID.SEID
	c.Rate, c.Ceil = s.Pol.FlowRates(g, ambr)
	c.sizeQueue(s.Pol, s.Pol.BudgetOf(g.QFI))
	return c
}

// Alloc takes the lowest free minor.
func (s *State) Alloc() (uint16, bool) {
	for m := max(s.lowFree, int(FirstFlowMinor)); m <= int(LastFlowMinor); m++ {
		if m != int(OwnedMajor) && !s.used[m] {
			s.used[m] = true
			s.lowFree = m + 1
			return uint16(m), true
		}
	}
	return 0, false
}

// Free gives a minor back.
func (s *State) Free(m uint16) {
	s.used[m] = false
	s.lowFree = min(s.lowFree, int(m))
}

// fixSessions brings the touched sessions' AMBR classes in line with their
// flows, as Plan does: the AMBR of the first flow in FlowID order (others
// that differ are warned about), the rate the sum of the flows' rates
// capped at the AMBR; a session left without flows loses its class.
func (u *update) fixSessions() {
	s := u.s
	for _, seid := range slices.Sorted(maps.Keys(u.touched)) {
		sp := s.sessions[seid]
		if sp == nil {
			continue
		}
		if len(sp.flows) == 0 {
			c, _ := s.Classes.Get(sp.Minor)
			s.Classes.Del(sp.Minor)
			delete(s.sessions, seid)
			if u.created(c.Minor) {
				continue // created and emptied in this update: nothing to write
			}
			s.linkSum = s.linkSum.Sub(s.linkShare(c))
			u.freedSessions = append(u.freedSessions, c)
			continue
		}
		u.fixSession(seid, sp)
	}
}

// created reports whether this update creates class m, and forgets it if
// so.
func (u *update) created(m uint16) bool {
	for i, c := range u.createSess {
		if c.Minor == m {
			u.createSess = slices.Delete(u.createSess, i, i+1)
			u.s.Free(m)
			return true
		}
	}
	return false
}

// fixSession recomputes one session's AMBR, its flows' ceilings and the
// AMBR conflict warnings, and its class's rate.
func (u *update) fixSession(seid uint64, sp *sessionPlan) {
	s := u.s
	ids := slices.SortedFunc(maps.Keys(sp.flows), shaper.CompareFlowID)
	first, _ := s.admittedFlow(ids[0])
	sp.ambr = min(first.SessionAMBR, s.Pol.LinkRate)
	var rate uint64
	for _, id := range ids {
		f, _ := s.admittedFlow(id)
		s.problems.dropKind(id, shaper.AMBRConflict)
		if min(f.SessionAMBR, s.Pol.LinkRate) != sp.ambr {
			s.problems.add(id, shaper.Problem{Kind: shaper.AMBRConflict, Severity: shaper.Warning, Flow: id, Name: f.Label(),
				Field: "session_ambr", Detail: fmt.Sprintf("session AMBR %s differs from %s given by another flow of seid %d: using %s",
					shaper.FormatRate(f.SessionAMBR), shaper.FormatRate(sp.ambr), seid, shaper.FormatRate(sp.ambr))})
		}
		m := s.Minor[id]
		c := s.flowClass(f, m, sp.Minor, sp.ambr)
		if old, _ := s.Classes.Get(m); !sameClass(c, old) {
			s.Classes.Set(c.Minor, c)
			u.changed(c)
		}
		rate += c.Rate
	}
	old, _ := s.Classes.Get(sp.Minor)
	c := old
	c.Rate, c.Ceil = min(rate, sp.ambr), sp.ambr
	s.Classes.Set(c.Minor, c)
	s.linkSum = s.linkSum.Sub(s.linkShare(old)).Add(s.linkShare(c))
	if !sameClass(c, old) {
		u.changed(c)
	}
}

// changed records a class write: an update of a class this update creates
// (or changes already), else a change.
func (u *update) changed(c Class) {
	for _, list := range []*[]Class{&u.createSess, &u.createFlows, &u.d.Change} {
		for i := range *list {
			if (*list)[i].Minor == c.Minor {
				(*list)[i] = c
				return
			}
		}
	}
	u.d.Change = append(u.d.Change, c)
}

// finish turns what was dropped and not placed again into unbinds and
// deletes (flows before their sessions), frees their minors, and orders
// the creates parents first.
func (u *update) finish() {
	s := u.s
	left := make([]Class, 0, len(u.freed))
	for _, c := range u.freed {
		left = append(left, c)
	}
	slices.SortFunc(left, func(a, b Class) int { return int(a.Minor) - int(b.Minor) })
	for _, c := range left {
		u.Unbind(c)
		if c.Parent == LinkMinor && len(s.Spares) < s.Pol.Pool {
			// Parked: the next new flow changes it back.
			sp := SpareClass(s.Base, c.Minor)
			s.Classes.Set(sp.Minor, sp)
			s.Spares = append(s.Spares, c.Minor)
			u.d.Change = append(u.d.Change, sp)
			continue
		}
		u.d.Del = append(u.d.Del, c.Minor)
	}
	slices.Sort(s.Spares)
	for _, c := range u.freedSessions {
		u.d.Del = append(u.d.Del, c.Minor)
	}
	for _, m := range u.d.Del {
		s.Free(m)
	}
	u.d.Create = append(u.createSess, u.createFlows...)
}
