package qosview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
	"github.com/free5gc/gtpqos/shaper"
)

// Problems of the SDF rule view (SDFRules). Their values sit apart from
// Build's kinds.
const (
	// SDFFallback: a TEID's rules cannot all be matched by the stock
	// classifier (more than shaper.MaxSDFRules PDRs, more port ranges than
	// shaper.MaxSDFPortRanges, an IPv6 filter): its flows are classified by
	// (TEID, QFI) alone, and flows sharing the wire QFI share one class.
	SDFFallback ProblemKind = 100 + iota
	// SDFShadowed: a PDR's filter is covered by an earlier PDR of another
	// flow on the same TEID: gtp5g never matches it, so its flow counts
	// nothing and the packets are enforced in the other flow's class.
	SDFShadowed
)

func sdfKindName(k ProblemKind) (string, bool) {
	switch k {
	case SDFFallback:
		return "sdf-fallback", true
	case SDFShadowed:
		return "sdf-shadowed", true
	}
	return "", false
}

// sdfOut is the flow description direction gtp5g matches (it compares
// every rule with GTP5G_SDF_FILTER_OUT, both directions).
const sdfOut = 2

// SDFRules gives, per TEID and direction, the SDF rules of the PDRs whose
// packets cross N3 under that TEID, in gtp5g's order (precedence, lowest
// first; equal precedences by PDR id), each naming the flow of flows it
// belongs to (none for the default path when it has no class). The stock
// gtp5g classifier matches the inner packet against them, so a flow is
// found by its PDR, whatever QFI gtp5g writes. A TEID whose rules the
// classifier cannot match is left out and reported (SDFFallback).
func SDFRules(pdrs []gtp5g.PDR, fars []gtp5g.FAR, flows []shaper.Flow) ([]shaper.SessionRules, []Problem) {
	farTEID := map[Key]uint32{}
	for _, f := range fars {
		if f.Forwarding != nil && f.Forwarding.OuterHeaderCreation != nil {
			farTEID[Key{f.SEID, f.ID}] = f.Forwarding.OuterHeaderCreation.TEID
		}
	}
	qerRefs := map[Key]int{}
	for _, p := range pdrs {
		for _, q := range p.QERIDs {
			qerRefs[Key{p.SEID, q}]++
		}
	}
	type tkey struct {
		dir  shaper.Direction
		teid uint32
		seid uint64
	}
	groups := map[tkey][]shaper.SDFRule{}
	bad := map[tkey]string{}
	for i := range pdrs {
		p := &pdrs[i]
		dir := pdrDirection(p)
		teid := uint32(0)
		if dir == shaper.Uplink && p.PDI.FTEID != nil {
			teid = p.PDI.FTEID.TEID
		} else if dir == shaper.Downlink {
			teid = farTEID[Key{p.SEID, p.FARID}]
		}
		if teid == 0 {
			continue // not on N3 (yet)
		}
		k := tkey{dir, teid, p.SEID}
		r, why, never := sdfRule(p)
		switch {
		case never:
			continue // gtp5g never matches it
		case why != "":
			bad[k] = fmt.Sprintf("PDR %d: %s", p.ID, why)
			r.Flow = pdrFlow(p, dir, flows, qerRefs)
			groups[k] = append(groups[k], r) // named in the problem
			continue
		}
		r.Flow = pdrFlow(p, dir, flows, qerRefs)
		groups[k] = append(groups[k], r)
	}
	var out []shaper.SessionRules
	var probs []Problem
	for k, rs := range groups {
		slices.SortFunc(rs, func(a, b shaper.SDFRule) int {
			return cmp.Or(cmp.Compare(a.Precedence, b.Precedence), cmp.Compare(a.PDR, b.PDR))
		})
		if len(rs) > shaper.MaxSDFRules && bad[k] == "" {
			bad[k] = fmt.Sprintf("%d PDRs, the classifier matches at most %d", len(rs), shaper.MaxSDFRules)
		}
		if why := bad[k]; why != "" {
			probs = append(probs, Problem{Kind: SDFFallback, SEID: k.seid, Detail: fmt.Sprintf(
				"%s TEID %d: %s; flows %s are classified by (TEID, QFI), and those gtp5g gives one QFI share a class",
				k.dir, k.teid, why, flowNames(rs))})
			continue
		}
		probs = append(probs, shadowed(k.dir, k.teid, k.seid, rs)...)
		out = append(out, shaper.SessionRules{Direction: k.dir, TEID: k.teid, SEID: k.seid, Rules: rs})
	}
	slices.SortFunc(out, func(a, b shaper.SessionRules) int {
		return cmp.Or(cmp.Compare(a.Direction, b.Direction), cmp.Compare(a.TEID, b.TEID), cmp.Compare(a.SEID, b.SEID))
	})
	slices.SortFunc(probs, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.SEID, b.SEID), strings.Compare(a.Detail, b.Detail))
	})
	return out, probs
}

// pdrDirection is Build's rule: source interface, else an F-TEID means
// uplink.
func pdrDirection(p *gtp5g.PDR) shaper.Direction {
	if si := p.PDI.SourceInterface; si != nil {
		if *si == gtp5g.InterfaceAccess {
			return shaper.Uplink
		}
		return shaper.Downlink
	}
	if p.PDI.FTEID != nil {
		return shaper.Uplink
	}
	return shaper.Downlink
}

// pdrFlow finds the flow of flows a PDR belongs to: one of its session and
// direction whose QER the PDR lists; of several, the one whose QER fewer
// PDRs list (the flow's own QER, not the session AMBR's shared one).
func pdrFlow(p *gtp5g.PDR, dir shaper.Direction, flows []shaper.Flow, refs map[Key]int) shaper.FlowID {
	var best shaper.FlowID
	bestRefs := 0
	for _, f := range flows {
		if f.ID.SEID != p.SEID || f.Direction != dir || !slices.Contains(p.QERIDs, f.ID.QERID) {
			continue
		}
		n := refs[Key{p.SEID, f.ID.QERID}]
		if bestRefs == 0 || n < bestRefs {
			best, bestRefs = f.ID, n
		}
	}
	return best
}

// sdfRule compiles a PDR's filter. never: gtp5g cannot match it (an "in"
// rule); why: the classifier cannot.
func sdfRule(p *gtp5g.PDR) (r shaper.SDFRule, why string, never bool) {
	r = shaper.SDFRule{PDR: p.ID, Precedence: p.Precedence, Proto: 0xff}
	if p.PDI.UEAddr.IsValid() {
		if !p.PDI.UEAddr.Is4() {
			return r, "IPv6 UE address", false
		}
		r.UE = p.PDI.UEAddr.As4()
	}
	if p.PDI.SDF == nil || p.PDI.SDF.Rule == nil {
		return r, "", false // matches every packet of the UE
	}
	fd := p.PDI.SDF.Rule
	if fd.Direction != sdfOut {
		return r, "", true
	}
	r.Proto = fd.Protocol
	var ok bool
	if r.Src, r.SrcMask, ok = addrMask(fd.Src, fd.SrcMask); !ok {
		return r, "source address not IPv4", false
	}
	if r.Dst, r.DstMask, ok = addrMask(fd.Dst, fd.DstMask); !ok {
		return r, "destination address not IPv4", false
	}
	if len(fd.SrcPorts) > shaper.MaxSDFPortRanges || len(fd.DstPorts) > shaper.MaxSDFPortRanges {
		return r, fmt.Sprintf("more than %d port ranges", shaper.MaxSDFPortRanges), false
	}
	for _, pr := range fd.SrcPorts {
		r.SrcPorts = append(r.SrcPorts, shaper.PortRange{Lo: pr.Start, Hi: pr.End})
	}
	for _, pr := range fd.DstPorts {
		r.DstPorts = append(r.DstPorts, shaper.PortRange{Lo: pr.Start, Hi: pr.End})
	}
	return r, "", false
}

// addrMask returns an address and mask; an absent address matches any,
// an absent mask is a full /32 (as gtpnl reports gtp5g's dump).
func addrMask(a, m interface {
	IsValid() bool
	Is4() bool
	As4() [4]byte
}) (addr, mask [4]byte, ok bool) {
	if !a.IsValid() {
		return addr, mask, true
	}
	if !a.Is4() {
		return addr, mask, false
	}
	addr, mask = a.As4(), [4]byte{0xff, 0xff, 0xff, 0xff}
	if m.IsValid() {
		if !m.Is4() {
			return addr, mask, false
		}
		mask = m.As4()
	}
	return addr, mask, true
}

// shadowed reports rules that an earlier rule of another flow covers.
func shadowed(dir shaper.Direction, teid uint32, seid uint64, rs []shaper.SDFRule) []Problem {
	var out []Problem
	for j := range rs {
		for i := 0; i < j; i++ {
			if rs[i].Flow != rs[j].Flow && covers(rs[i], rs[j]) {
				out = append(out, Problem{Kind: SDFShadowed, SEID: seid, PDR: rs[j].PDR, QER: rs[j].Flow.QERID, Detail: fmt.Sprintf(
					"%s TEID %d: PDR %d (precedence %d) matches every packet this PDR (precedence %d) would: gtp5g never uses it, and its packets are enforced with %s",
					dir, teid, rs[i].PDR, rs[i].Precedence, rs[j].Precedence, flowName(rs[i].Flow))})
				break
			}
		}
	}
	return out
}

// covers says whether every packet b matches, a matches too.
func covers(a, b shaper.SDFRule) bool {
	if a.UE != ([4]byte{}) && a.UE != b.UE {
		return false
	}
	if a.Proto != 0xff && a.Proto != b.Proto {
		return false
	}
	return netCovers(a.Src, a.SrcMask, b.Src, b.SrcMask) && netCovers(a.Dst, a.DstMask, b.Dst, b.DstMask) &&
		portsCover(a.SrcPorts, b.SrcPorts) && portsCover(a.DstPorts, b.DstPorts)
}

func netCovers(a, am, b, bm [4]byte) bool {
	for i := range 4 {
		if am[i]&^bm[i] != 0 || (a[i]^b[i])&am[i] != 0 {
			return false
		}
	}
	return true
}

func portsCover(a, b []shaper.PortRange) bool {
	if len(a) == 0 {
		return true
	}
	if len(b) == 0 {
		return false
	}
	for _, rb := range b {
		if !slices.ContainsFunc(a, func(ra shaper.PortRange) bool { return ra.Lo <= rb.Lo && rb.Hi <= ra.Hi }) {
			return false
		}
	}
	return true
}

func flowName(id shaper.FlowID) string {
	if id == (shaper.FlowID{}) {
		return "the default class (no flow)"
	}
	return "flow " + id.String()
}

func flowNames(rs []shaper.SDFRule) string {
	var names []string
	for _, r := range rs {
		if n := flowName(r.Flow); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}
