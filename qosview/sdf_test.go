package qosview

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
	"github.com/free5gc/gtpqos/shaper"
)

// The seed session's downlink TEID carries its PDRs in gtp5g's order, each
// naming its flow: the non-GBR flow C by its own QER 5, not the session
// AMBR QER 1 listed first; the default path by its own flow (QER 2, under
// the session's AMBR).
func TestSDFRulesSeedSession(t *testing.T) {
	qers, pdrs, fars := seedSession().build()
	flows, _ := Build(qers, pdrs, fars, Options{})
	rules, probs := SDFRules(pdrs, fars, flows)
	if len(probs) != 0 {
		t.Fatalf("problems: %v", probs)
	}
	var dl *shaper.SessionRules
	for i := range rules {
		if rules[i].Direction == shaper.Downlink {
			dl = &rules[i]
		}
	}
	if dl == nil || dl.TEID != 100 || dl.SEID != seedSEID {
		t.Fatalf("downlink rules %+v, want TEID 100 of session 1", rules)
	}
	var got []string
	for _, r := range dl.Rules {
		got = append(got, flowName(r.Flow)+"/"+string(rune('0'+r.PDR)))
	}
	want := []string{"flow " + shaper.FlowID{SEID: 1, QERID: 3}.String() + "/4", "flow " + shaper.FlowID{SEID: 1, QERID: 4}.String() + "/6",
		"flow " + shaper.FlowID{SEID: 1, QERID: 5}.String() + "/8", "flow " + shaper.FlowID{SEID: 1, QERID: 2}.String() + "/2"}
	if !slices.Equal(got, want) {
		t.Fatalf("rules %v, want %v", got, want)
	}
	c := dl.Rules[2]
	if c.Src != [4]byte{192, 168, 100, 5} || c.SrcMask != [4]byte{255, 255, 255, 255} || c.Dst != [4]byte{10, 60, 0, 1} ||
		c.UE != [4]byte{10, 60, 0, 1} || c.Proto != 0xff {
		t.Fatalf("flow C's rule %+v", c)
	}
	if d := dl.Rules[3]; d.Proto != 0xff || d.SrcMask != ([4]byte{}) || d.UE != [4]byte{10, 60, 0, 1} {
		t.Fatalf("default path rule %+v: want any packet to the UE", d)
	}
}

func fd(proto uint8, src, smask, dst, dmask string, dports ...uint16) *gtp5g.SDFFilter {
	r := &gtp5g.FlowDescription{Action: 1, Direction: 2, Protocol: proto}
	for _, x := range []struct {
		s string
		a *netip.Addr
	}{{src, &r.Src}, {smask, &r.SrcMask}, {dst, &r.Dst}, {dmask, &r.DstMask}} {
		if x.s != "" {
			*x.a = netip.MustParseAddr(x.s)
		}
	}
	for i := 0; i+1 < len(dports); i += 2 {
		r.DstPorts = append(r.DstPorts, gtp5g.PortRange{Start: dports[i], End: dports[i+1]})
	}
	return &gtp5g.SDFFilter{Rule: r}
}

func dlPDR(id uint16, prec uint32, qer uint32, sdf *gtp5g.SDFFilter) gtp5g.PDR {
	return gtp5g.PDR{SEID: 7, ID: id, Precedence: prec, FARID: 1, QERIDs: []uint32{qer}, PDI: gtp5g.PDI{UEAddr: netip.MustParseAddr("10.60.0.9"), SDF: sdf}}
}

var teid9 = []gtp5g.FAR{{SEID: 7, ID: 1, Forwarding: &gtp5g.ForwardingParameters{OuterHeaderCreation: &gtp5g.OuterHeaderCreation{TEID: 9}}}}

func TestSDFRulesCompile(t *testing.T) {
	flows := []shaper.Flow{{ID: shaper.FlowID{SEID: 7, QERID: 1}, Direction: shaper.Downlink}, {ID: shaper.FlowID{SEID: 7, QERID: 2}, Direction: shaper.Downlink}}
	pdrs := []gtp5g.PDR{
		dlPDR(2, 20, 2, fd(17, "10.200.0.2", "", "10.60.0.9", "", 5001, 5001)),
		dlPDR(1, 10, 1, fd(6, "10.200.0.0", "255.255.0.0", "", "")),
		// An "in" rule never matches in gtp5g: left out.
		{SEID: 7, ID: 3, Precedence: 1, FARID: 1, QERIDs: []uint32{1}, PDI: gtp5g.PDI{SDF: &gtp5g.SDFFilter{Rule: &gtp5g.FlowDescription{Direction: 1, Protocol: 0xff}}}},
	}
	rules, probs := SDFRules(pdrs, teid9, flows)
	if len(probs) != 0 || len(rules) != 1 || len(rules[0].Rules) != 2 {
		t.Fatalf("rules %+v problems %v", rules, probs)
	}
	a, b := rules[0].Rules[0], rules[0].Rules[1]
	if a.PDR != 1 || a.Proto != 6 || a.SrcMask != [4]byte{255, 255, 0, 0} || a.DstMask != ([4]byte{}) || a.Flow.QERID != 1 {
		t.Fatalf("first rule %+v", a)
	}
	if b.PDR != 2 || b.Proto != 17 || !slices.Equal(b.DstPorts, []shaper.PortRange{{Lo: 5001, Hi: 5001}}) || b.DstMask != [4]byte{255, 255, 255, 255} || b.Flow.QERID != 2 {
		t.Fatalf("second rule %+v", b)
	}
}

// A PDR that an earlier PDR of another flow covers is reported: both flows
// are enforced in the first one's class.
func TestSDFRulesShadowed(t *testing.T) {
	flows := []shaper.Flow{{ID: shaper.FlowID{SEID: 7, QERID: 1}, Direction: shaper.Downlink}, {ID: shaper.FlowID{SEID: 7, QERID: 2}, Direction: shaper.Downlink}}
	pdrs := []gtp5g.PDR{
		dlPDR(1, 10, 1, fd(0xff, "10.200.0.0", "255.255.0.0", "", "")),
		dlPDR(2, 20, 2, fd(17, "10.200.0.2", "", "", "", 5001, 5001)),
	}
	_, probs := SDFRules(pdrs, teid9, flows)
	if len(probs) != 1 || probs[0].Kind != SDFShadowed || probs[0].PDR != 2 || !strings.Contains(probs[0].String(), "sdf-shadowed seid=7 pdr=2 qer=2") ||
		!strings.Contains(probs[0].Detail, "PDR 1 (precedence 10)") {
		t.Fatalf("problems %v", probs)
	}
}

// Beyond the classifier's bound the TEID falls back to (TEID, QFI), and
// the problem says so, naming the flows.
func TestSDFRulesFallback(t *testing.T) {
	flows := []shaper.Flow{{ID: shaper.FlowID{SEID: 7, QERID: 1}, Direction: shaper.Downlink}}
	var pdrs []gtp5g.PDR
	for i := range shaper.MaxSDFRules + 1 {
		pdrs = append(pdrs, dlPDR(uint16(i+1), uint32(i), 1, fd(17, "", "", "", "", uint16(1000+i), uint16(1000+i))))
	}
	rules, probs := SDFRules(pdrs, teid9, flows)
	if len(rules) != 0 || len(probs) != 1 || probs[0].Kind != SDFFallback || !strings.Contains(probs[0].Detail, "17 PDRs, the classifier matches at most 16") ||
		!strings.Contains(probs[0].Detail, "flow "+flows[0].ID.String()) {
		t.Fatalf("rules %+v problems %v", rules, probs)
	}
	pdrs = []gtp5g.PDR{dlPDR(1, 1, 1, fd(17, "", "", "", "", 1, 1, 3, 3, 5, 5, 7, 7, 9, 9))}
	if _, probs = SDFRules(pdrs, teid9, flows); len(probs) != 1 || !strings.Contains(probs[0].Detail, "PDR 1: more than 4 port ranges") {
		t.Fatalf("problems %v", probs)
	}
}
