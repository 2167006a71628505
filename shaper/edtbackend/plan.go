package edtbackend

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"

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
// mark, or KeyedID's for an unmarked flow) where a class handle is
// expected: "edt/0x2".
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
	// FqBucketsLog is log2 of the leaf's flow table size (0: fq's own,
	// 1024 buckets): bucketsLog.
	FqBucketsLog uint32
	// Prio is HTB's priority: a lower one borrows first.
	Prio uint32
}

// PlannedFlow is one admitted flow and its map entry.
type PlannedFlow struct {
	// ID is the flow's id in the maps: its mark; for a flow without one
	// (stock gtp5g), found by its (TEID, QFI), an id above the marks
	// (keyedIDs).
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
	// Room is the sessions the policy's `edt: {sessions: N}` asks the maps
	// to hold (0: the backend's default).
	Room int
	// Rules are the program's SDF rule table on a downlink device of
	// stock gtp5g (planRules): TEID -> the session's rules, valued in
	// the flows' ids; nil without rules.
	Rules    map[uint32]edt.Rules
	Problems []shaper.Problem
}

// MakePlan admits flows under pol (pol.Overhead fixed) and plans the tree
// and the map entries; nil when pol is unusable (the problems say why).
// Flows are admitted in FlowID order (a device's Apply admits the flows
// its maps hold first: planApply).
func MakePlan(flows []shaper.Flow, pol shaper.Policy) *Plan { return makePlan(flows, pol, nil) }

// makePlan is MakePlan with admission ranks (shaper.Admit; nil: all new).
func makePlan(flows []shaper.Flow, pol shaper.Policy, rank func(*shaper.Flow) int) *Plan {
	pol, probs, ok := shaper.CheckPolicy(pol)
	if !ok {
		return &Plan{Problems: probs}
	}
	k, err := DecodeKnobs(pol.BackendKnobs.Of(Name))
	if err != nil {
		return &Plan{Problems: append(probs, shaper.Problem{Kind: shaper.BadPolicy, Severity: shaper.Error, Name: "policy", Field: "edt", Detail: err.Error()})}
	}
	ad := shaper.Admit(flows, pol, rank, checkFlow)
	p := &Plan{Link: pol.LinkRate, Sessions: map[uint32]uint64{}, Room: k.Sessions, Problems: append(probs, ad.Problems...)}
	if pol.Accounting == shaper.AccountPacket {
		p.Overhead = pol.Overhead.Bytes
	}
	var gbrSum uint64
	ids := keyedIDs(ad.Flows)
	for i, f := range ad.Flows {
		id := f.Mark
		if f.Mark == 0 {
			id = ids[f.ID]
		}
		var ambr uint64
		if si := ad.SessionOf[i]; si >= 0 {
			ambr = ad.Sessions[si].AMBR
		}
		pf := planFlow(pol, f, id, ambr)
		if pf.Spec.Session != 0 {
			p.Sessions[pf.Spec.Session] = ambr
		}
		gbrSum += pf.Spec.GBR
		p.Flows = append(p.Flows, pf)
	}
	p.Classes = tree(pol, gbrSum, p.Overhead, p.Room)
	return p
}

// planFlow is an admitted flow's map entry under id (its mark, or for an
// unmarked flow its keyedIDs id): ambr is its session's AMBR when the
// flow is under it (a non-GBR flow of a session with one), else 0.
func planFlow(pol shaper.Policy, f shaper.Flow, id uint32, ambr uint64) PlannedFlow {
	_, mbr := pol.FlowRates(f, 0)
	// The horizon is the flow's delay budget: a packet that would leave
	// later is dropped, which bounds the queue a sender above its MBR
	// builds.
	s := edt.FlowSpec{MBR: mbr, DelayBudget: pol.BudgetOf(f.QFI), Class: ClassID(MinorNonGBR)}
	if f.Mark != 0 {
		s.Marks = []uint32{f.Mark}
	} else {
		s.Keys = []edt.Key{{TEID: f.TEID, QFI: f.QFI}}
	}
	if pol.Mode == shaper.Aware && f.GBR > 0 {
		s.GBR, s.GBRClass = f.GBR, ClassID(MinorGuaranteed)
	}
	if ambr != 0 {
		s.Session = uint32(f.ID.SEID)
	}
	return PlannedFlow{ID: id, Flow: f, Spec: s}
}

// tree is the fixed tree for a link whose admitted GBRs add up to gbrSum,
// its shared leaves' flow tables sized for room sessions (bucketsLog).
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
func tree(pol shaper.Policy, gbrSum uint64, overhead uint32, room int) []Class {
	link := pol.LinkRate
	dflt := min(max(pol.DefaultRate, shaper.MinRate), link)
	limit := horizonLimit(link, pol.MaxBudget())
	buckets := bucketsLog(room)
	return []Class{
		{Minor: MinorLink, Role: shaper.RoleLink, Name: "link", Rate: link, Ceil: link, Overhead: uint16(overhead)},
		{Minor: MinorGuaranteed, Parent: MinorLink, Role: shaper.RoleShared, Name: "guaranteed", Rate: max(gbrSum, shaper.MinRate), Ceil: link,
			FqLimit: limit, FqFlowLimit: limit, FqBucketsLog: buckets},
		{Minor: MinorNonGBR, Parent: MinorLink, Role: shaper.RoleShared, Name: "non-GBR", Rate: nonGBRRate(link, gbrSum), Ceil: link, Prio: 1,
			FqBucketsLog: buckets},
		// Last, as the tree is written in this order: HTB gives a packet
		// whose class does not exist yet the default class, so a default
		// class written before the shared ones held the packets the
		// program had already put in those; without it yet they leave
		// through HTB's direct queue.
		{Minor: MinorDefault, Parent: MinorLink, Role: shaper.RoleDefault, Name: "default", Rate: dflt, Ceil: link, Prio: 1},
	}
}

// Flow ids of unmarked flows lie in [keyedBase, 2^32): above every mark
// (shaper.MarkMask), so no id of a marked flow is one of theirs.
const keyedBase = shaper.MarkMask + 1

// keyedIDs gives each flow without a mark its id in the maps: a hash of
// its identity (SEID, QER id, direction) probing past ids taken, in
// identity order, so the same flows get the same ids in every plan and
// after a restart (a second apply writes nothing).
func keyedIDs(flows []shaper.Flow) map[shaper.FlowID]uint32 {
	var todo []shaper.Flow
	for _, f := range flows {
		if f.Mark == 0 {
			todo = append(todo, f)
		}
	}
	slices.SortFunc(todo, func(a, b shaper.Flow) int { return shaper.CompareFlowID(a.ID, b.ID) })
	const span = math.MaxUint32 - keyedBase + 1
	out := make(map[shaper.FlowID]uint32, len(todo))
	used := map[uint32]bool{}
	for _, f := range todo {
		h := fnv.New32a()
		_ = binary.Write(h, binary.LittleEndian, [3]uint64{f.ID.SEID, uint64(f.ID.QERID), uint64(f.Direction)})
		id := keyedBase + h.Sum32()%span
		for used[id] {
			if id++; id == 0 {
				id = keyedBase
			}
		}
		used[id], out[f.ID] = true, id
	}
	return out
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

// checkFlow refuses what the program cannot pace: a flow with neither a
// mark (the patched gtp5g's) nor a TEID (stock gtp5g's packets are found
// by their (TEID, QFI)), and a session id above 32 bits under an AMBR (the
// maps key sessions by 32 bits).
func checkFlow(f *shaper.Flow) ([]shaper.Problem, bool) {
	if f.Mark == 0 && f.TEID == 0 {
		return []shaper.Problem{shaper.FlowProblem(shaper.Error, shaper.BadMark, f, "mark",
			"no mark and no TEID: edt finds a packet's flow by the patched gtp5g's mark or, on stock gtp5g, by its GTP-U (TEID, QFI)")}, false
	}
	if f.GBR == 0 && f.SessionAMBR > 0 && f.ID.SEID > math.MaxUint32 {
		return []shaper.Problem{shaper.FlowProblem(shaper.Error, shaper.BadPolicy, f, "seid",
			"seid %d above %d: edt keys sessions by 32 bits", f.ID.SEID, uint32(math.MaxUint32))}, false
	}
	return nil, true
}
