package edtbackend

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

func testFlows() []shaper.Flow {
	return []shaper.Flow{
		{ID: shaper.FlowID{SEID: 1, QERID: 1}, Name: "A", QFI: 9, Direction: shaper.Downlink, MBR: 1e6, SessionAMBR: 3e6, Mark: 0x10},
		{ID: shaper.FlowID{SEID: 1, QERID: 2}, Name: "B", QFI: 8, Direction: shaper.Downlink, MBR: 4e6, SessionAMBR: 3e6, Mark: 0x20},
		{ID: shaper.FlowID{SEID: 2, QERID: 1}, Name: "G", QFI: 1, Direction: shaper.Downlink, GBR: 2e6, MBR: 5e6, Mark: 0x30},
	}
}

// The tree is fixed (link, default, guaranteed = the GBRs at prio 0,
// non-GBR at half of what the GBRs leave, borrowing the rest at prio 1); flows become map entries keyed by mark, non-GBR flows of a
// session with an AMBR share its session entry, a GBR flow has none.
func TestPlanTreeAndMaps(t *testing.T) {
	pol := shaper.DefaultPolicy(20e6)
	pol.Overhead = shaper.Overhead{Fixed: true, Bytes: 14}
	p := MakePlan(testFlows(), pol)
	if len(p.Problems) != 0 {
		t.Fatalf("problems: %v", p.Problems)
	}
	rates := map[uint16]uint64{}
	for _, c := range p.Classes {
		rates[c.Minor] = c.Rate
		if c.Ceil != 20e6 {
			t.Errorf("class %s ceil %d, want the link", Handle(c.Minor), c.Ceil)
		}
	}
	want := map[uint16]uint64{MinorLink: 20e6, MinorDefault: 1e6, MinorGuaranteed: 2e6, MinorNonGBR: 9e6}
	for m, r := range want {
		if rates[m] != r {
			t.Errorf("class %s rate %d, want %d", Handle(m), rates[m], r)
		}
	}
	for _, c := range p.Classes {
		if want := map[uint16]uint32{MinorGuaranteed: 0, MinorNonGBR: 1, MinorDefault: 1}; c.Minor != MinorLink && c.Prio != want[c.Minor] {
			t.Errorf("class %s prio %d, want %d", Handle(c.Minor), c.Prio, want[c.Minor])
		}
	}
	if len(p.Sessions) != 1 || p.Sessions[1] != 3e6 {
		t.Errorf("sessions %v, want session 1 at 3 Mbit/s only", p.Sessions)
	}
	byID := map[uint32]PlannedFlow{}
	for _, f := range p.Flows {
		byID[f.ID] = f
	}
	if s := byID[0x10].Spec; s.Session != 1 || s.MBR != 1e6 || s.Class != ClassID(MinorNonGBR) || s.GBR != 0 {
		t.Errorf("flow A spec %+v", s)
	}
	if s := byID[0x30].Spec; s.Session != 0 || s.GBR != 2e6 || s.GBRClass != ClassID(MinorGuaranteed) {
		t.Errorf("flow G spec %+v: want GBR in the guaranteed class, outside any session", s)
	}
	out := p.TCCommands("eth1")
	for _, w := range []string{"tc qdisc replace dev eth1 root handle 6765: stab overhead -14 linklayer ethernet htb default 2",
		"classid 6765:1 htb rate 20mbit ceil 20mbit overhead 14", "parent 6765:11 handle 11: fq orphan_mask 4294967295", "classid 6765:10 htb rate 2mbit ceil 20mbit burst 32k cburst 32k quantum 12500 prio 0",
		"#   session 1: AMBR 3mbit", "edt/0x30 mark 0x30: MBR 5mbit GBR 2mbit"} {
		if !strings.Contains(out, w) {
			t.Errorf("render lacks %q:\n%s", w, out)
		}
	}
}

// The non-GBR class keeps half of what the GBRs leave, whatever the
// non-GBR flows (a session is map writes, no class), and at least
// shaper.MinRate when the GBRs fill the link.
func TestNonGBRRate(t *testing.T) {
	for _, tc := range []struct{ link, gbr, want uint64 }{
		{20e6, 2e6, 9e6},
		{7.5e6, 5e6, 1.25e6},
		{8e6, 6e6, 1e6},
		{8e6, 0, 4e6},
		{8e6, 8e6, shaper.MinRate},
		{8e6, 9e6, shaper.MinRate},
		{8e6, 8e6 - 10, shaper.MinRate},
	} {
		if got := nonGBRRate(tc.link, tc.gbr); got != tc.want {
			t.Errorf("nonGBRRate(%d, %d) = %d, want %d", tc.link, tc.gbr, got, tc.want)
		}
	}
	pol := shaper.DefaultPolicy(20e6)
	pol.Overhead = shaper.Overhead{Fixed: true, Bytes: 14}
	one, more := MakePlan(testFlows()[:1], pol), MakePlan(testFlows(), pol)
	rate := func(p *Plan) uint64 {
		for _, c := range p.Classes {
			if c.Minor == MinorNonGBR {
				return c.Rate
			}
		}
		return 0
	}
	if gbr := func(p *Plan) (s uint64) {
		for _, f := range p.Flows {
			s += f.Spec.GBR
		}
		return s
	}; gbr(one) == gbr(more) && rate(one) != rate(more) {
		t.Errorf("non-GBR class rate %d with one flow, %d with more at the same GBR sum", rate(one), rate(more))
	}
}

// Stock gtp5g's flows carry no mark: refused, one line naming why.
func TestPlanRefusesUnmarkedFlow(t *testing.T) {
	f := testFlows()[:1]
	f[0].Mark = 0
	p := MakePlan(f, shaper.DefaultPolicy(20e6))
	if len(p.Flows) != 0 || len(p.Problems) != 1 || !strings.Contains(p.Problems[0].Error(), "edt needs the patched gtp5g's marks") {
		t.Errorf("flows %v, problems %v; want the flow refused naming the marks", p.Flows, p.Problems)
	}
}
