package edtbackend

import (
	"fmt"
	"math"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// Name is the backend's name in a policy (`backend: edt`).
const Name = "edt"

// Major is the root qdisc's handle major (ASCII "ge"; tc shows 6765:),
// distinct from the HTB backend's so neither takes the other's tree for
// its own.
const Major uint16 = 0x6765

// The tree's class minors. Each leaf's fq qdisc takes the minor as its
// handle major.
const (
	MinorLink       uint16 = 0x1
	MinorDefault    uint16 = 0x2
	MinorGuaranteed uint16 = 0x10
	MinorNonGBR     uint16 = 0x11
)

// ClassID is the full id of the tree's class minor (what skb->priority
// holds).
func ClassID(minor uint16) uint32 { return uint32(Major)<<16 | uint32(minor) }

// Handle formats a minor as tc does: "6765:10".
func Handle(minor uint16) string { return fmt.Sprintf("%x:%x", Major, minor) }

// FlowHandle names a flow's entry in the program's maps (flow id = its
// mark) where a class handle is expected: "edt/0x2".
func FlowHandle(id uint32) string { return fmt.Sprintf("edt/%#x", id) }

// Class is one class of the fixed tree.
type Class struct {
	Minor, Parent uint16 // Parent 0: under the root
	Role          shaper.Role
	Name          string
	Rate, Ceil    uint64 // bit/s
	Overhead      uint16 // bytes each packet's rate spec adds back (the link class)
	// FqLimit and FqFlowLimit are the leaf's packet limits (0: fq's own).
	FqLimit, FqFlowLimit uint32
	// Prio is HTB's priority: a lower one borrows first.
	Prio uint32
}

// PlannedFlow is one admitted flow and its map entry.
type PlannedFlow struct {
	// ID is the flow's id in the maps: its mark.
	ID   uint32
	Flow shaper.Flow
	Spec edt.FlowSpec
}

// Plan is what the device holds for a set of flows.
type Plan struct {
	Link     uint64
	Overhead uint32 // 0: frame accounting
	Classes  []Class
	Flows    []PlannedFlow
	// Sessions are the AMBRs (bit/s) by session id (the SEID).
	Sessions map[uint32]uint64
	Problems []shaper.Problem
}

// MakePlan admits flows under pol (pol.Overhead fixed) and plans the tree
// and the map entries; nil when pol is unusable (the problems say why).
func MakePlan(flows []shaper.Flow, pol shaper.Policy) *Plan {
	pol, probs, ok := shaper.CheckPolicy(pol)
	if !ok {
		return &Plan{Problems: probs}
	}
	ad := shaper.Admit(flows, pol, nil, checkFlow)
	p := &Plan{Link: pol.LinkRate, Sessions: map[uint32]uint64{}, Problems: append(probs, ad.Problems...)}
	if pol.Accounting == shaper.AccountPacket {
		p.Overhead = pol.Overhead.Bytes
	}
	var gbrSum uint64
	for i, f := range ad.Flows {
		_, mbr := pol.FlowRates(f, 0)
		// The horizon is the flow's delay budget: a packet that would leave
		// later is dropped, which bounds the queue a sender above its MBR
		// builds.
		s := edt.FlowSpec{Marks: []uint32{f.Mark}, MBR: mbr, DelayBudget: pol.BudgetOf(f.QFI), Class: ClassID(MinorNonGBR)}
		if pol.Mode == shaper.Aware && f.GBR > 0 {
			s.GBR, s.GBRClass = f.GBR, ClassID(MinorGuaranteed)
			gbrSum += f.GBR
		}
		if si := ad.SessionOf[i]; si >= 0 {
			sess := ad.Sessions[si]
			s.Session = uint32(sess.SEID)
			p.Sessions[s.Session] = sess.AMBR
		}
		p.Flows = append(p.Flows, PlannedFlow{ID: f.Mark, Flow: f, Spec: s})
	}
	p.Classes = tree(pol, gbrSum, p.Overhead)
	return p
}

// tree is the fixed tree for a link whose admitted GBRs add up to gbrSum.
//
// The guaranteed class holds what the GBR meter lets through, never more
// than the GBRs (and the meter's bursts), so it borrows first (prio 0): a
// guaranteed class behind its GBRs (the leaf not served for a while: a
// busy CPU, timer slack, a stalled host) catches up, else its backlog
// would stand, then overflow the leaf. The non-GBR class has a rate of
// its own, nonGBRRate: half of what the GBRs leave. HTB serves every
// class within its own rate before any class borrows, so while the
// guaranteed class catches up the non-GBR flows keep that half and the
// guaranteed class catches up with the other half. Without it (8 bit/s)
// the non-GBR flows lost every stall of the host to the catch-up: the GBR
// flows' packets, scheduled up to their horizon ahead, left as soon as
// the host ran again, so the link time lost came out of best effort alone.
func tree(pol shaper.Policy, gbrSum uint64, overhead uint32) []Class {
	link := pol.LinkRate
	dflt := min(max(pol.DefaultRate, shaper.MinRate), link)
	limit, flowLimit := horizonLimits(link, pol.MaxBudget())
	return []Class{
		{Minor: MinorLink, Role: shaper.RoleLink, Name: "link", Rate: link, Ceil: link, Overhead: uint16(overhead)},
		{Minor: MinorDefault, Parent: MinorLink, Role: shaper.RoleDefault, Name: "default", Rate: dflt, Ceil: link, Prio: 1},
		{Minor: MinorGuaranteed, Parent: MinorLink, Role: shaper.RoleShared, Name: "guaranteed", Rate: max(gbrSum, shaper.MinRate), Ceil: link,
			FqLimit: limit, FqFlowLimit: flowLimit},
		{Minor: MinorNonGBR, Parent: MinorLink, Role: shaper.RoleShared, Name: "non-GBR", Rate: nonGBRRate(link, gbrSum), Ceil: link, Prio: 1},
	}
}

// nonGBRRate is the non-GBR class's own rate on a link whose admitted
// GBRs add up to gbrSum: half of what they leave, at least shaper.MinRate.
// It depends on the GBR sum alone, so adding or removing a non-GBR flow
// or session still writes no class.
func nonGBRRate(link, gbrSum uint64) uint64 {
	if gbrSum >= link {
		return shaper.MinRate
	}
	return max((link-gbrSum)/2, shaper.MinRate)
}

// checkFlow refuses what the program cannot pace: a flow without a mark
// (stock gtp5g marks nothing) and a session id above 32 bits under an
// AMBR (the maps key sessions by 32 bits).
func checkFlow(f *shaper.Flow) ([]shaper.Problem, bool) {
	if f.Mark == 0 {
		return []shaper.Problem{shaper.FlowProblem(shaper.Error, shaper.BadMark, f, "mark",
			"no mark: edt needs the patched gtp5g's marks")}, false
	}
	if f.GBR == 0 && f.SessionAMBR > 0 && f.ID.SEID > math.MaxUint32 {
		return []shaper.Problem{shaper.FlowProblem(shaper.Error, shaper.BadPolicy, f, "seid",
			"seid %d above %d: edt keys sessions by 32 bits", f.ID.SEID, uint32(math.MaxUint32))}, false
	}
	return nil, true
}
