package qosview

import (
	"fmt"
	"sort"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
	"github.com/free5gc/gtpqos/shaper"
)

// Options tune how Build maps rules to flows.
type Options struct {
	// MarkMode is gtp5g's flow-mark mode (gtp5g-patch). It decides
	// Flow.Mark: MarkOff (stock gtp5g, or the patch switched off) gives 0;
	// MarkQFI gives the QFI gtp5g writes into the PDR's packets; MarkFlow
	// gives the flow mark gtp5g reports for the PDR; MarkPDR gives the
	// PDR's own mark. Flows left sharing a mark are reported (SharedMark).
	MarkMode gtp5g.MarkMode
}

// Build joins PDRs, QERs and FARs into QoS flows for the shaper, one per
// (flow QER, direction), sorted by direction, SEID and QER id. Flows of
// both directions are returned: callers plan the downlink ones on N3 and
// the uplink ones on N6.
//
//   - Direction: a PDR with source interface core is downlink, access is
//     uplink. Stock gtp5g v0.10.2 leaves the source interface out of its
//     dumps; then a PDR with a local F-TEID is uplink (as gtp5g's datapath
//     treats it) and one without is downlink.
//   - Contract: the PDR's one rate-bearing QER that is not the session AMBR
//     (see Roles) gives QFI, GBR and MBR for that direction. No rate in
//     that direction (the default flow's QER): no flow. The session-AMBR
//     QER's MBR becomes SessionAMBR.
//   - TEID: downlink, the FAR's outer-header-creation TEID; uplink, the
//     PDR's F-TEID.
//   - Mark: see Options.MarkMode.
//
// Anything Build cannot map without guessing is reported as a Problem
// naming the session and rule, and that PDR yields no flow (or, for an
// unknown TEID, a flow with TEID 0).
func Build(qers []gtp5g.QER, pdrs []gtp5g.PDR, fars []gtp5g.FAR, opts Options) ([]shaper.Flow, []Problem) {
	b := builder{opts: opts, qers: map[Key]*gtp5g.QER{}, fars: map[Key]*gtp5g.FAR{}, flows: map[flowKey]int{}}
	for i := range qers {
		k := Key{qers[i].SEID, qers[i].ID}
		if _, dup := b.qers[k]; dup {
			b.problem(Problem{Kind: DuplicateRule, SEID: k.SEID, QER: k.ID, Detail: "QER listed twice (same SEID and id, e.g. on two gtp5g devices); the first is used"})
			continue
		}
		b.qers[k] = &qers[i]
	}
	for i := range fars {
		k := Key{fars[i].SEID, fars[i].ID}
		if _, dup := b.fars[k]; dup {
			b.problem(Problem{Kind: DuplicateRule, SEID: k.SEID, Detail: fmt.Sprintf("FAR %d listed twice; the first is used", k.ID)})
			continue
		}
		b.fars[k] = &fars[i]
	}
	b.roles = Roles(qers, pdrs)

	order := make([]int, len(pdrs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool {
		a, c := &pdrs[order[x]], &pdrs[order[y]]
		if a.SEID != c.SEID {
			return a.SEID < c.SEID
		}
		return a.ID < c.ID
	})
	for _, i := range order {
		b.pdr(&pdrs[i])
	}

	sort.SliceStable(b.out, func(x, y int) bool {
		a, c := b.out[x], b.out[y]
		if a.Direction != c.Direction {
			return a.Direction < c.Direction
		}
		if a.ID.SEID != c.ID.SEID {
			return a.ID.SEID < c.ID.SEID
		}
		return a.ID.QERID < c.ID.QERID
	})
	b.problems = append(b.problems, sharedMarks(b.out, opts.MarkMode)...)
	return b.out, b.problems
}

type flowKey struct {
	id  shaper.FlowID
	dir shaper.Direction
}

type builder struct {
	opts     Options
	qers     map[Key]*gtp5g.QER
	fars     map[Key]*gtp5g.FAR
	roles    map[Key]Role
	flows    map[flowKey]int // index into out
	out      []shaper.Flow
	problems []Problem
}

func (b *builder) problem(p Problem) { b.problems = append(b.problems, p) }

// direction returns the PDR's direction, or false after reporting.
func (b *builder) direction(p *gtp5g.PDR) (shaper.Direction, bool) {
	if si := p.PDI.SourceInterface; si != nil {
		switch *si {
		case gtp5g.InterfaceCore:
			return shaper.Downlink, true
		case gtp5g.InterfaceAccess:
			return shaper.Uplink, true
		}
		b.problem(Problem{Kind: UnknownInterface, SEID: p.SEID, PDR: p.ID, Detail: fmt.Sprintf("source interface %s is neither access nor core", *si)})
		return 0, false
	}
	if p.PDI.FTEID != nil {
		return shaper.Uplink, true
	}
	return shaper.Downlink, true
}

func rates(q *gtp5g.QER, dir shaper.Direction) (gbr, mbr uint64) {
	if dir == shaper.Downlink {
		return q.GBR.Downlink, q.MBR.Downlink
	}
	return q.GBR.Uplink, q.MBR.Uplink
}

func (b *builder) pdr(p *gtp5g.PDR) {
	dir, ok := b.direction(p)
	if !ok {
		return
	}
	q, ambr, wireFrom, ok := b.pdrQERs(p)
	if !ok {
		return // a problem reported, or no rate at all
	}
	gbr, mbr := rates(q, dir)
	if q == ambr {
		// The default path: its QoS flow has no rate of its own and lives
		// under the session AMBR, as every non-GBR flow does. Without an
		// AMBR in this direction it has no contract and no class.
		gbr, mbr = 0, 0
		if _, a := rates(ambr, dir); a == 0 {
			return
		}
		q = b.defaultQER(p, ambr)
	} else if gbr == 0 && mbr == 0 {
		return // no contract in this direction: no class
	}
	f := shaper.Flow{
		ID:        shaper.FlowID{SEID: p.SEID, QERID: q.ID},
		QFI:       q.QFI,
		Direction: dir,
		GBR:       gbr,
		MBR:       mbr,
	}
	if ambr != nil {
		_, f.SessionAMBR = rates(ambr, dir)
	}

	wireQFI := p.QFI // reported by the patch
	if wireQFI == 0 && wireFrom != nil {
		wireQFI = wireFrom.QFI // what gtp5g's set_pdr_qfi picks
	}
	if wireQFI != q.QFI {
		b.problem(Problem{Kind: WireQFI, SEID: p.SEID, PDR: p.ID, QER: q.ID, Detail: fmt.Sprintf(
			"gtp5g writes QFI %d into this PDR's packets (first QER with a QFI in %v), not the flow's QFI %d", wireQFI, p.QERIDs, q.QFI)})
	}

	f.TEID = b.teid(p, dir)
	f.Mark = b.mark(p, q, wireFrom, wireQFI)

	fk := flowKey{f.ID, dir}
	if i, dup := b.flows[fk]; dup {
		if old := b.out[i]; old.TEID != f.TEID || old.Mark != f.Mark {
			b.problem(Problem{Kind: Conflict, SEID: p.SEID, PDR: p.ID, QER: q.ID, Detail: fmt.Sprintf(
				"PDRs of one %s flow disagree: TEID %d vs %d, mark %#x vs %#x; the first is used", dir, old.TEID, f.TEID, old.Mark, f.Mark)})
		}
		return
	}
	b.flows[fk] = len(b.out)
	b.out = append(b.out, f)
}

// pdrQERs sorts a PDR's QERs into the one rate-bearing QER of its flow, the
// session-AMBR QER (nil: none) and the QER gtp5g takes the GTP-U QFI from
// (the first with a QFI). ok is false for a default flow (no rate-bearing
// QER) and when the QERs are ambiguous (reported).
func (b *builder) pdrQERs(p *gtp5g.PDR) (q, ambr, wireFrom *gtp5g.QER, ok bool) {
	var cands []*gtp5g.QER
	for _, id := range p.QERIDs {
		k := Key{p.SEID, id}
		qq := b.qers[k]
		if qq == nil {
			b.problem(Problem{Kind: DanglingQER, SEID: p.SEID, PDR: p.ID, QER: id, Detail: "the PDR references a QER the session does not have"})
			continue
		}
		if wireFrom == nil && qq.QFI > 0 {
			wireFrom = qq
		}
		switch b.roles[k] {
		case RoleSessionAMBR:
			if ambr != nil && ambr != qq {
				b.problem(Problem{Kind: AmbiguousQER, SEID: p.SEID, PDR: p.ID, QER: id, Detail: fmt.Sprintf("two session-AMBR QERs (%d and %d)", ambr.ID, id)})
				return nil, nil, nil, false
			}
			ambr = qq
		case RoleFlow:
			// Rate-bearing in either direction: which QER carries the
			// flow's contract is decided before looking at this direction,
			// so an unrecognised AMBR QER is never taken for a flow.
			cands = append(cands, qq)
		}
	}
	if len(cands) > 1 {
		ids := make([]uint32, len(cands))
		for i, c := range cands {
			ids[i] = c.ID
		}
		b.problem(Problem{Kind: AmbiguousQER, SEID: p.SEID, PDR: p.ID, Detail: fmt.Sprintf("%d rate-bearing QERs %v and none recognised as the session AMBR", len(cands), ids)})
		return nil, nil, nil, false
	}
	if len(cands) == 0 {
		if ambr != nil {
			// The default path ([default QER, AMBR QER]): the caller
			// makes it the session's default flow.
			return ambr, ambr, wireFrom, true
		}
		return nil, nil, nil, false
	}
	return cands[0], ambr, wireFrom, true
}

// defaultQER is the QER that names a default-path PDR's QoS flow: the
// first QER without a rate that carries a QFI (free5GC's default QER, QFI
// and gate only), else the session-AMBR QER itself.
func (b *builder) defaultQER(p *gtp5g.PDR, ambr *gtp5g.QER) *gtp5g.QER {
	for _, id := range p.QERIDs {
		k := Key{p.SEID, id}
		if q := b.qers[k]; q != nil && b.roles[k] == RoleNoRate && q.QFI > 0 {
			return q
		}
	}
	return ambr
}

func (b *builder) teid(p *gtp5g.PDR, dir shaper.Direction) uint32 {
	if dir == shaper.Uplink {
		if p.PDI.FTEID != nil {
			return p.PDI.FTEID.TEID
		}
		return 0
	}
	far := b.fars[Key{p.SEID, p.FARID}]
	if far == nil {
		detail := fmt.Sprintf("the PDR references FAR %d, which the session does not have: TEID unknown", p.FARID)
		if p.FARID == 0 {
			detail = "the PDR has no FAR: TEID unknown"
		}
		b.problem(Problem{Kind: DanglingFAR, SEID: p.SEID, PDR: p.ID, Detail: detail})
		return 0
	}
	if far.Forwarding == nil || far.Forwarding.OuterHeaderCreation == nil {
		return 0 // not (yet) tunnelled, e.g. buffering while the UE is idle
	}
	return far.Forwarding.OuterHeaderCreation.TEID
}

func (b *builder) mark(p *gtp5g.PDR, q, wireFrom *gtp5g.QER, wireQFI uint8) uint32 {
	switch b.opts.MarkMode {
	case gtp5g.MarkQFI:
		return uint32(wireQFI)
	case gtp5g.MarkPDR:
		if p.PDRMark == 0 {
			b.problem(Problem{Kind: NoMark, SEID: p.SEID, PDR: p.ID, QER: q.ID, Detail: "mark mode pdr, but gtp5g reports no PDR mark (module without the pdr-mark patch?)"})
		}
		return p.PDRMark
	case gtp5g.MarkFlow:
		m := p.FlowMark
		if m == 0 && wireFrom != nil {
			m = wireFrom.FlowMark
		}
		if m == 0 {
			b.problem(Problem{Kind: NoMark, SEID: p.SEID, PDR: p.ID, QER: q.ID, Detail: "mark mode flow, but gtp5g reports no flow mark (module without the patch?)"})
		}
		return m
	default:
		return 0
	}
}
