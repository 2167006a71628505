// Package bpf holds what the BPF programs of the gtpu classifier
// (shaper/classify/gtpu) and the edt pacer (shaper/edt) share: the C
// headers gtpu_parse.h (the GTP-U parser) and sdf_match.h (the SDF rule
// matcher), and here the Go side of the latter, the layout of one TEID's
// rule table and how a session's SDF rules become one.
package bpf

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"structs"

	"github.com/free5gc/gtpqos/shaper"
)

// SDFRules is struct sdf_rules of sdf_match.h: one session's rules on one
// TEID, in gtp5g's order, N of them used. It is comparable, so a map's
// mirror tells a rewrite from a no-op.
type SDFRules struct {
	_ structs.HostLayout
	N uint32
	R [shaper.MaxSDFRules]SDFRule
}

// SDFRule is struct sdf_rule: addresses in network byte order (as they sit
// in the packet), Value what a match yields (0: no flow).
type SDFRule struct {
	_       structs.HostLayout
	Src     uint32
	Smask   uint32
	Dst     uint32
	Dmask   uint32
	Ue      uint32
	Value   uint32
	Proto   uint8
	UeIsSrc uint8
	Nsport  uint8
	Ndport  uint8
	Sport   [shaper.MaxSDFPortRanges]PortRange
	Dport   [shaper.MaxSDFPortRanges]PortRange
}

// PortRange is struct port_range.
type PortRange struct {
	_  structs.HostLayout
	Lo uint16
	Hi uint16
}

// CompileSDF builds TEID -> rules for direction d from the sessions' SDF
// rules (qosview.SDFRules). A rule's Value is value(its flow), 0 for none.
// A TEID listed by two sessions keeps the lower SEID's rules; one with more
// rules or port ranges than the programs match is left out: both are
// noted, and those TEIDs fall back to (TEID, QFI).
func CompileSDF(all []shaper.SessionRules, d shaper.Direction, value func(shaper.FlowID) uint32) (map[uint32]SDFRules, []string) {
	rules := slices.Clone(all)
	slices.SortFunc(rules, func(a, b shaper.SessionRules) int {
		return cmp.Or(cmp.Compare(a.TEID, b.TEID), cmp.Compare(a.SEID, b.SEID))
	})
	out := map[uint32]SDFRules{}
	owner := map[uint32]uint64{}
	var notes []string
	for _, sr := range rules {
		if sr.Direction != d || sr.TEID == 0 {
			continue
		}
		if o, dup := owner[sr.TEID]; dup {
			notes = append(notes, fmt.Sprintf("%s TEID %d: sessions %d and %d both list it; session %d's SDF rules are used", d, sr.TEID, o, sr.SEID, o))
			continue
		}
		v, err := Layout(sr.Rules, d, value)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s TEID %d (session %d): %v; classified by (TEID, QFI)", d, sr.TEID, sr.SEID, err))
			continue
		}
		owner[sr.TEID] = sr.SEID
		out[sr.TEID] = v
	}
	return out, notes
}

// Layout lays one TEID's rules out as the programs read them.
func Layout(rs []shaper.SDFRule, d shaper.Direction, value func(shaper.FlowID) uint32) (SDFRules, error) {
	var out SDFRules
	if len(rs) > len(out.R) {
		return out, fmt.Errorf("%d SDF rules, the classifier matches at most %d", len(rs), len(out.R))
	}
	for i, r := range rs {
		b := &out.R[i]
		if len(r.SrcPorts) > len(b.Sport) || len(r.DstPorts) > len(b.Dport) {
			return out, fmt.Errorf("PDR %d: more than %d port ranges", r.PDR, len(b.Sport))
		}
		// Addresses keep their wire byte order in memory, as the program
		// compares them.
		b.Src, b.Smask = binary.NativeEndian.Uint32(r.Src[:]), binary.NativeEndian.Uint32(r.SrcMask[:])
		b.Dst, b.Dmask = binary.NativeEndian.Uint32(r.Dst[:]), binary.NativeEndian.Uint32(r.DstMask[:])
		b.Ue = binary.NativeEndian.Uint32(r.UE[:])
		b.Value, b.Proto = value(r.Flow), r.Proto
		if d == shaper.Uplink {
			b.UeIsSrc = 1
		}
		b.Nsport, b.Ndport = uint8(len(r.SrcPorts)), uint8(len(r.DstPorts))
		for j, p := range r.SrcPorts {
			b.Sport[j].Lo, b.Sport[j].Hi = p.Lo, p.Hi
		}
		for j, p := range r.DstPorts {
			b.Dport[j].Lo, b.Dport[j].Hi = p.Lo, p.Hi
		}
	}
	out.N = uint32(len(rs))
	return out, nil
}
