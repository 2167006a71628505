package plan

import (
	"fmt"
	"maps"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
)

// prevIndex finds a flow's class in the previous tree. It points into the
// tree's classes rather than copying them: a plan of 65k flows against
// the kept tree would otherwise hold several copies of every class at once.
type prevIndex struct {
	flows *shaper.Index[uint16] // minors
	// Spares are the previous tree's spare minors, lowest first.
	Spares []uint16
	// sessionBySEID maps SEIDs of session classes (planned trees only).
	sessionBySEID map[uint64]Class
	Classes       map[uint16]*Class
}

func newPrevIndex(t *Tree) *prevIndex {
	n := 0
	if t != nil {
		n = len(t.Classes)
	}
	ix := &prevIndex{flows: shaper.NewIndex[uint16](n), sessionBySEID: map[uint64]Class{}, Classes: make(map[uint16]*Class, n)}
	if t == nil {
		return ix
	}
	for i := range t.Classes {
		c := &t.Classes[i]
		ix.Classes[c.Minor] = c
		switch c.Role {
		case shaper.RoleFlow:
			ix.flows.Add(c.Flow, c.Key(), c.Minor)
		case shaper.RoleSession:
			if c.SEID != 0 {
				ix.sessionBySEID[c.SEID] = *c
			}
		case shaper.RoleSpare:
			ix.Spares = append(ix.Spares, c.Minor)
		}
	}
	slices.Sort(ix.Spares)
	return ix
}

// lookup finds f's class (shaper.Index says how).
func (ix *prevIndex) lookup(f *shaper.Flow) (Class, bool) {
	m, ok := ix.flows.Find(f)
	if !ok {
		return Class{}, false
	}
	return *ix.Classes[m], true
}

// rank is f's admission rank (shaper.Admit): new without a class; grown
// when it asks for more GBR than its class was given (a class read from
// the kernel knows no GBR: its rate stands for it) or for other keys (a
// mark or (TEID, QFI) another flow may hold), so it never pushes out a
// flow that keeps what it had.
func (ix *prevIndex) rank(f *shaper.Flow) int {
	c, ok := ix.lookup(f)
	if !ok {
		return shaper.AdmitNew
	}
	given := c.GBR
	if c.Flow == (shaper.FlowID{}) {
		given = c.Rate
	}
	if f.GBR > given || c.Key() != (shaper.Key{Mark: f.Mark, TEID: f.TEID, QFI: f.QFI}) {
		return shaper.AdmitGrown
	}
	return shaper.AdmitKept
}

// planner assigns class ids (minors) to the admitted flows and sessions and
// builds the tree.
type planner struct {
	Pol      Policy
	ix       *prevIndex
	adm      *shaper.Admitted
	problems []shaper.Problem

	used    [1 << 16]bool
	cursor  int
	claimed map[uint16]bool
	// prev and had are each admitted flow's class in the previous tree;
	// flowMinor its minor in the new one (0: none left).
	prev      []Class
	had       []bool
	flowMinor []uint16
	// sessionMinor is each session's minor (0: none left).
	sessionMinor []uint16
	// Spares are the spare minors left after the flows took theirs.
	Spares []uint16
}

// problem reports an error about flow f.
func (p *planner) problem(kind shaper.ProblemKind, f *shaper.Flow, field, detail string) {
	p.problems = append(p.problems, shaper.Problem{Kind: kind, Severity: shaper.Error, Flow: f.ID, Name: f.Label(), Field: field, Detail: detail})
}

// reserve marks a minor used; false if it was taken or is not assignable.
func (p *planner) reserve(m uint16) bool {
	if m < FirstFlowMinor || m > LastFlowMinor || m == OwnedMajor || p.used[m] {
		return false
	}
	p.used[m] = true
	return true
}

// release frees a minor blocked (not yet claimed) in this plan; false if
// it is not in blocked or was claimed already.
func (p *planner) release(m uint16, blocked map[uint16]bool) bool {
	if !blocked[m] || p.claimed[m] {
		return false
	}
	if p.claimed == nil {
		p.claimed = map[uint16]bool{}
	}
	p.claimed[m] = true
	p.used[m] = false
	return true
}

// next returns the lowest free minor, or false when none is left.
func (p *planner) next() (uint16, bool) {
	if p.cursor < int(FirstFlowMinor) {
		p.cursor = int(FirstFlowMinor)
	}
	for ; p.cursor <= int(LastFlowMinor); p.cursor++ {
		m := uint16(p.cursor)
		if m != OwnedMajor && !p.used[m] {
			p.used[m] = true
			p.cursor++
			return m, true
		}
	}
	return 0, false
}

// assignMinors keeps the minors flows and sessions had in the previous tree
// where their parent stays the same, and gives the others the lowest free
// ones.
func (p *planner) assignMinors() {
	n := len(p.adm.Flows)
	p.prev, p.had, p.flowMinor = make([]Class, n), make([]bool, n), make([]uint16, n)
	for i := range p.adm.Flows {
		p.prev[i], p.had[i] = p.ix.lookup(&p.adm.Flows[i])
	}
	p.distrustBindings()
	for i := range p.adm.Flows {
		if p.had[i] {
			p.had[i] = p.reserve(p.prev[i].Minor)
		}
	}
	for _, m := range p.ix.Spares {
		if p.reserve(m) {
			p.Spares = append(p.Spares, m)
		}
	}
	p.assignSessionMinors()
	for i := range p.adm.Flows {
		s := p.adm.SessionOf[i]
		if s >= 0 && p.sessionMinor[s] == 0 {
			continue // the session got no class id
		}
		if p.had[i] && p.prev[i].Parent == p.parentOf(i) {
			p.flowMinor[i] = p.prev[i].Minor // reserved above
			continue
		}
		if p.parentOf(i) == LinkMinor && len(p.Spares) > 0 {
			p.flowMinor[i], p.Spares = p.Spares[0], p.Spares[1:] // a change, not a create
			continue
		}
		m, ok := p.next()
		if !ok {
			if s < 0 {
				p.problem(shaper.TooManyFlows, &p.adm.Flows[i], "id", fmt.Sprintf("no class id left (max %d classes)", MaxClasses))
			}
			continue
		}
		p.flowMinor[i] = m
	}
	p.reportFullSessions()
}

// reportFullSessions says, in one line per session, which sessions lost
// flows for want of class ids.
func (p *planner) reportFullSessions() {
	for si, s := range p.adm.Sessions {
		if p.sessionMinor[si] == 0 {
			continue // reported by assignSessionMinors
		}
		lost := 0
		for _, i := range s.Flows {
			if p.flowMinor[i] == 0 {
				lost++
			}
		}
		if lost > 0 {
			p.problem(shaper.TooManyFlows, &p.adm.Flows[s.Flows[0]], "id", fmt.Sprintf(
				"session seid=%d: %d of its %d flows refused: no class id left (a session takes one class id for its AMBR class and one per QoS flow; max %d classes)",
				s.SEID, lost, len(s.Flows), MaxClasses))
		}
	}
}

// assignSessionMinors gives each session a minor: its class's in the
// previous tree, else the parent its flows had there, else a fresh one.
func (p *planner) assignSessionMinors() {
	p.sessionMinor = make([]uint16, len(p.adm.Sessions))
	// Block the minors of previous session-like classes for one plan:
	// reused by a flow they would have to be deleted and re-created (they
	// still have children), which costs more than a fresh minor.
	blocked := map[uint16]bool{}
	for _, c := range p.ix.Classes {
		if c.Role == shaper.RoleSession && !p.used[c.Minor] && p.reserve(c.Minor) {
			blocked[c.Minor] = true
		}
	}
	for si, s := range p.adm.Sessions {
		if c, ok := p.ix.sessionBySEID[s.SEID]; ok && p.release(c.Minor, blocked) && p.reserve(c.Minor) {
			p.sessionMinor[si] = c.Minor
			continue
		}
		// The kernel's tree does not know SEIDs: reuse the parent the
		// session's flows had, if it was a session-like class.
		for _, i := range s.Flows {
			if !p.had[i] {
				continue
			}
			parent, ok := p.ix.Classes[p.prev[i].Parent]
			if ok && parent.Role == shaper.RoleSession && (parent.SEID == 0 || parent.SEID == s.SEID) &&
				p.release(parent.Minor, blocked) && p.reserve(parent.Minor) {
				p.sessionMinor[si] = parent.Minor
				break
			}
		}
	}
	for si, s := range p.adm.Sessions {
		if p.sessionMinor[si] != 0 {
			continue
		}
		m, ok := p.next()
		if !ok {
			// One line for the session: its flows go with it.
			p.problem(shaper.TooManyFlows, &p.adm.Flows[s.Flows[0]], "id", sessionFull(s.SEID, len(s.Flows)))
			continue
		}
		p.sessionMinor[si] = m
	}
}

// park keeps the previous tree's flow classes under the link class that
// no flow took (their flows left) as spares, lowest minor first, while
// there are fewer spares than the pool asks for: the next new flow changes
// one instead of creating a class. Spares beyond the pool (it was made
// smaller) leave the tree, the highest first.
func (p *planner) park() {
	if len(p.Spares) > p.Pol.Pool {
		for _, m := range p.Spares[p.Pol.Pool:] {
			p.used[m] = false
		}
		p.Spares = p.Spares[:p.Pol.Pool]
	}
	for _, m := range slices.Sorted(maps.Keys(p.ix.Classes)) {
		if len(p.Spares) >= p.Pol.Pool {
			break
		}
		c := p.ix.Classes[m]
		if c.Role == shaper.RoleFlow && c.Parent == LinkMinor && p.reserve(m) {
			p.Spares = append(p.Spares, m)
		}
	}
	slices.Sort(p.Spares)
}

// parentOf returns the minor of admitted flow i's parent class.
func (p *planner) parentOf(i int) uint16 {
	if s := p.adm.SessionOf[i]; s >= 0 {
		return p.sessionMinor[s]
	}
	return LinkMinor
}

// sessionFull says a session found no class id: it needs one for its AMBR
// class and one per flow under it.
func sessionFull(seid uint64, flows int) string {
	n := ""
	if flows > 0 {
		n = fmt.Sprintf(", so its %d flows under it are refused too", flows)
	}
	return fmt.Sprintf("session seid=%d refused: no class id left for its AMBR class%s (a session takes one class id for its AMBR class and one per QoS flow; max %d classes)", seid, n, MaxClasses)
}
