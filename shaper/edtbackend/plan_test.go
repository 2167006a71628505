package edtbackend

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edt"
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

// Stock gtp5g's flows carry no mark: each is keyed by its (TEID, QFI),
// with an id above every mark that is the same whatever the flows' order;
// a flow with neither a mark nor a TEID is refused, naming why.
func TestPlanUnmarkedFlowsByKey(t *testing.T) {
	fl := testFlows()
	for i := range fl[:2] {
		fl[i].Mark, fl[i].TEID = 0, 100
	}
	p := MakePlan(fl, shaper.DefaultPolicy(20e6))
	if len(p.Problems) != 0 || len(p.Flows) != 3 {
		t.Fatalf("flows %v, problems %v", p.Flows, p.Problems)
	}
	ids := map[string]uint32{}
	for _, f := range p.Flows {
		ids[f.Flow.Name] = f.ID
		switch f.Flow.Name {
		case "A", "B":
			if f.ID <= shaper.MarkMask || len(f.Spec.Marks) != 0 || len(f.Spec.Keys) != 1 || f.Spec.Keys[0] != (edt.Key{TEID: 100, QFI: f.Flow.QFI}) {
				t.Errorf("flow %s: id %#x spec %+v; want an id above the marks, keyed by teid 100 qfi %d", f.Flow.Name, f.ID, f.Spec, f.Flow.QFI)
			}
		case "G":
			if f.ID != 0x30 || len(f.Spec.Keys) != 0 {
				t.Errorf("marked flow G: id %#x keys %v; want its mark, no key", f.ID, f.Spec.Keys)
			}
		}
	}
	if ids["A"] == ids["B"] {
		t.Errorf("A and B share id %#x", ids["A"])
	}
	q := MakePlan([]shaper.Flow{fl[2], fl[1], fl[0]}, shaper.DefaultPolicy(20e6))
	for _, f := range q.Flows {
		if f.ID != ids[f.Flow.Name] {
			t.Errorf("flow %s: id %#x in another order, %#x before", f.Flow.Name, f.ID, ids[f.Flow.Name])
		}
	}
	if out := p.TCCommands("eth1"); !strings.Contains(out, "GTP-U teid 100 qfi 9: MBR 1mbit") {
		t.Errorf("render lacks the key:\n%s", out)
	}
	none := fl[:1]
	none[0].TEID = 0
	r := MakePlan(none, shaper.DefaultPolicy(20e6))
	if len(r.Flows) != 0 || len(r.Problems) != 1 || !strings.Contains(r.Problems[0].Error(), "no mark and no TEID") {
		t.Errorf("flows %v, problems %v; want the flow refused naming mark and TEID", r.Flows, r.Problems)
	}
}

// Two flows on one (TEID, QFI) cannot both be found: the second is
// refused (admission's duplicate-teid).
func TestPlanDuplicateKey(t *testing.T) {
	fl := testFlows()[:2]
	for i := range fl {
		fl[i].Mark, fl[i].TEID, fl[i].QFI = 0, 100, 1
	}
	p := MakePlan(fl, shaper.DefaultPolicy(20e6))
	if len(p.Flows) != 1 || len(p.Problems) != 1 || p.Problems[0].Kind != shaper.DuplicateTEID {
		t.Errorf("flows %v, problems %v; want one flow and a duplicate-teid problem", p.Flows, p.Problems)
	}
}

// A flow's counters are named by the shared class its packets go to (the
// guaranteed one for a GBR flow), a tc class id as metrics print it, not by
// its map key.
func TestFlowCountersNameTheSharedClass(t *testing.T) {
	p := MakePlan(testFlows(), shaper.DefaultPolicy(20e6))
	want := map[string]uint32{"A": ClassID(MinorNonGBR), "B": ClassID(MinorNonGBR), "G": ClassID(MinorGuaranteed)}
	for _, f := range p.Flows {
		if got := homeClass(f.Spec); got != want[f.Flow.Name] {
			t.Errorf("flow %s: class %#x, want %#x", f.Flow.Name, got, want[f.Flow.Name])
		}
	}
	if len(p.Flows) != len(want) {
		t.Errorf("planned %d flows, want %d", len(p.Flows), len(want))
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
