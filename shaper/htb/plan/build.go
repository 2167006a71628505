package plan

import (
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// build makes the tree from the admitted flows and the assigned minors.
func (p *planner) build() *Tree {
	pol := p.Pol
	link := pol.LinkRate
	t := Header(pol)
	t.Classes = make([]Class, 0, len(p.adm.Flows)+len(p.adm.Sessions)+2)
	base := Class{Burst: pol.Burst, CBurst: pol.CBurst, Quantum: pol.Quantum}
	lc := base
	lc.Minor, lc.Parent, lc.Role, lc.Rate, lc.Ceil = LinkMinor, 0, shaper.RoleLink, link, link
	// The link class stands for the wire: it counts whole frames.
	lc.Overhead = t.Overhead
	dc := base
	dc.Minor, dc.Parent, dc.Role, dc.Rate, dc.Ceil, dc.Prio = DefaultMinor, LinkMinor, shaper.RoleDefault, min(pol.DefaultRate, link), link, 7
	dc.sizeQueue(pol, pol.DelayBudget)
	t.Classes = append(t.Classes, lc, dc)
	share := shaper.LinkShare{Default: dc.Rate}
	sessionRate := make([]uint64, len(p.adm.Sessions))
	for i, f := range p.adm.Flows {
		if p.flowMinor[i] == 0 {
			continue
		}
		fc := base
		fc.Minor, fc.Parent, fc.Role, fc.Prio = p.flowMinor[i], p.parentOf(i), shaper.RoleFlow, pol.Prio
		fc.Flow, fc.Name, fc.Direction, fc.Mark, fc.TEID, fc.QFI = f.ID, f.Name, f.Direction, f.Mark, f.TEID, f.QFI
		fc.GBR, fc.MBR, fc.SEID = f.GBR, f.MBR, f.ID.SEID
		var ambr uint64
		s := p.adm.SessionOf[i]
		if s >= 0 {
			ambr = p.adm.Sessions[s].AMBR
		}
		fc.Rate, fc.Ceil = pol.FlowRates(f, ambr)
		fc.sizeQueue(pol, pol.BudgetOf(f.QFI))
		if s >= 0 {
			sessionRate[s] += fc.Rate
		} else {
			share = share.Add(classShare(pol, fc))
		}
		t.Classes = append(t.Classes, fc)
	}
	for si, s := range p.adm.Sessions {
		if p.sessionMinor[si] == 0 {
			continue
		}
		sc := base
		sc.Minor, sc.Parent, sc.Role, sc.Prio, sc.SEID = p.sessionMinor[si], LinkMinor, shaper.RoleSession, pol.Prio, s.SEID
		sc.Ceil = s.AMBR
		sc.Rate = min(sessionRate[si], s.AMBR)
		share = share.Add(classShare(pol, sc))
		t.Classes = append(t.Classes, sc)
	}
	for _, m := range p.Spares {
		t.Classes = append(t.Classes, SpareClass(base, m))
	}
	if over, ok := share.Oversubscribed(link); ok {
		p.problems = append(p.problems, over)
	}
	t.SortClasses()
	return t
}

// Header is the tree a plan under pol makes, without its classes: the
// kept plan's tree for a resync is given the same one.
func Header(pol Policy) *Tree {
	t := &Tree{Major: OwnedMajor, DefaultMinor: DefaultMinor, LinkRate: pol.LinkRate, Leaf: pol.Leaf, Classifier: pol.Classifier,
		Accounting: pol.Accounting}
	t.Overhead, _ = pol.ResolveOverhead(shaper.Downlink, shaper.DefaultEncap)
	return t
}

// sizeQueue sets a leaf class's delay budget and its FIFO leaf's limit.
func (c *Class) sizeQueue(pol Policy, budget time.Duration) {
	c.Budget, c.QueueLimit = budget, QueueLimit(c.Ceil, budget, pol.MaxFrame)
}
