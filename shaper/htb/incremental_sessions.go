package htb

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
	if s.pol.Mode != shaper.Aware || g.GBR != 0 || g.SessionAMBR == 0 {
		return LinkMinor, 0, true
	}
	sp := s.sessions[g.ID.SEID]
	if sp == nil {
		m, ok := s.alloc()
		if !ok {
			s.problems.add(g.ID, shaper.Problem{Kind: shaper.TooManyFlows, Severity: shaper.Error, Flow: g.ID,
				Name: g.Label(), Field: "id", Detail: sessionFull(g.ID.SEID, 0)})
			return 0, 0, false
		}
		sp = &sessionPlan{minor: m, ambr: min(g.SessionAMBR, s.pol.LinkRate), flows: map[shaper.FlowID]bool{}}
		s.sessions[g.ID.SEID] = sp
		c := s.base
		c.Minor, c.Parent, c.Role, c.Prio, c.SEID, c.Ceil = m, LinkMinor, shaper.RoleSession, s.pol.Prio, g.ID.SEID, sp.ambr
		s.classes.set(c.Minor, c)
		u.createSess = append(u.createSess, c)
	}
	u.touched[g.ID.SEID] = true
	return sp.minor, sp.ambr, true
}

// flowClass is an admitted flow's class (Plan's rates and ceilings).
func (s *planState) flowClass(g shaper.Flow, minor, parent uint16, ambr uint64) Class {
	c := s.base
	c.Minor, c.Parent, c.Role, c.Prio = minor, parent, shaper.RoleFlow, s.pol.Prio
	c.Flow, c.Name, c.Direction, c.Mark, c.TEID, c.QFI = g.ID, g.Name, g.Direction, g.Mark, g.TEID, g.QFI
	c.GBR, c.MBR, c.SEID = g.GBR, g.MBR, g.ID.SEID
	c.Rate, c.Ceil = s.pol.FlowRates(g, ambr)
	c.sizeQueue(s.pol, s.pol.BudgetOf(g.QFI))
	return c
}

// alloc takes the lowest free minor.
func (s *planState) alloc() (uint16, bool) {
	for m := max(s.lowFree, int(FirstFlowMinor)); m <= int(LastFlowMinor); m++ {
		if m != int(OwnedMajor) && !s.used[m] {
			s.used[m] = true
			s.lowFree = m + 1
			return uint16(m), true
		}
	}
	return 0, false
}

// free gives a minor back.
func (s *planState) free(m uint16) {
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
			c, _ := s.classes.get(sp.minor)
			s.classes.del(sp.minor)
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
			u.s.free(m)
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
	sp.ambr = min(first.SessionAMBR, s.pol.LinkRate)
	var rate uint64
	for _, id := range ids {
		f, _ := s.admittedFlow(id)
		s.problems.dropKind(id, shaper.AMBRConflict)
		if min(f.SessionAMBR, s.pol.LinkRate) != sp.ambr {
			s.problems.add(id, shaper.Problem{Kind: shaper.AMBRConflict, Severity: shaper.Warning, Flow: id, Name: f.Label(),
				Field: "session_ambr", Detail: fmt.Sprintf("session AMBR %s differs from %s given by another flow of seid %d: using %s",
					shaper.FormatRate(f.SessionAMBR), shaper.FormatRate(sp.ambr), seid, shaper.FormatRate(sp.ambr))})
		}
		m := s.minor[id]
		c := s.flowClass(f, m, sp.minor, sp.ambr)
		if old, _ := s.classes.get(m); !sameClass(c, old) {
			s.classes.set(c.Minor, c)
			u.changed(c)
		}
		rate += c.Rate
	}
	old, _ := s.classes.get(sp.minor)
	c := old
	c.Rate, c.Ceil = min(rate, sp.ambr), sp.ambr
	s.classes.set(c.Minor, c)
	s.linkSum = s.linkSum.Sub(s.linkShare(old)).Add(s.linkShare(c))
	if !sameClass(c, old) {
		u.changed(c)
	}
}

// changed records a class write: an update of a class this update creates
// (or changes already), else a change.
func (u *update) changed(c Class) {
	for _, list := range []*[]Class{&u.createSess, &u.createFlows, &u.d.change} {
		for i := range *list {
			if (*list)[i].Minor == c.Minor {
				(*list)[i] = c
				return
			}
		}
	}
	u.d.change = append(u.d.change, c)
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
		u.unbind(c)
		if c.Parent == LinkMinor && len(s.spares) < s.pol.Pool {
			// Parked: the next new flow changes it back.
			sp := spareClass(s.base, c.Minor)
			s.classes.set(sp.Minor, sp)
			s.spares = append(s.spares, c.Minor)
			u.d.change = append(u.d.change, sp)
			continue
		}
		u.d.del = append(u.d.del, c.Minor)
	}
	slices.Sort(s.spares)
	for _, c := range u.freedSessions {
		u.d.del = append(u.d.del, c.Minor)
	}
	for _, m := range u.d.del {
		s.free(m)
	}
	u.d.create = append(u.createSess, u.createFlows...)
}
