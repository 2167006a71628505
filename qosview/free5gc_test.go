package qosview

import (
	"fmt"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
	"github.com/free5gc/gtpqos/tests/free5gc"
)

// byName labels flows of the fixture: the default flow is "default", UE 2's
// "ue2-default".
func names(flows []shaper.Flow, sessions ...*free5gc.Session) map[string]shaper.Flow {
	out := map[string]shaper.Flow{}
	for _, f := range flows {
		for _, s := range sessions {
			if f.ID.SEID != s.SEID {
				continue
			}
			name := ""
			if f.ID.QERID == s.DefaultQER {
				name = fmt.Sprintf("default%d", s.SEID)
			}
			for _, fl := range s.Flows {
				if fl.QER == f.ID.QERID {
					name = fl.Name
				}
			}
			out[name+"/"+f.Direction.String()] = f
		}
	}
	return out
}

func TestFree5GCEstablishment(t *testing.T) {
	u := &free5gc.UPF{}
	s := u.Establish(1, "10.60.0.1", 200, 100, 5*free5gc.Mbit,
		free5gc.Flow{Name: "A", QFI: 2, GBR: 3_750_000, MBR: 4_500_000, DN: "192.168.100.2"},
		free5gc.Flow{Name: "B", QFI: 3, GBR: 1_250_000, MBR: 1_500_000, DN: "192.168.100.3"},
		free5gc.Flow{Name: "C", QFI: 4, MBR: 2 * free5gc.Mbit, DN: "192.168.100.4"},
	)
	d := free5gc.Build(true, s)
	if len(d.PDRs) != 8 || len(d.FARs) != 8 || len(d.QERs) != 5 {
		t.Fatalf("establishment: %d PDRs %d FARs %d QERs, want 8 8 5", len(d.PDRs), len(d.FARs), len(d.QERs))
	}
	for _, p := range d.PDRs {
		if len(p.URRIDs) != 2 {
			t.Errorf("PDR %d: URRs %v, want the session's two", p.ID, p.URRIDs)
		}
	}
	flows, problems := Build(d.QERs, d.PDRs, d.FARs, Options{MarkMode: gtp5g.MarkPDR})
	got := names(flows, s)
	if len(flows) != 8 {
		t.Fatalf("%d flows, want 8 (default, A, B, C each way): %+v", len(flows), flows)
	}
	for _, dir := range []string{"downlink", "uplink"} {
		def, c := got["default1/"+dir], got["C/"+dir]
		if def.SessionAMBR != 5*free5gc.Mbit || def.GBR != 0 || def.MBR != 0 || c.SessionAMBR != 5*free5gc.Mbit || c.MBR != 2*free5gc.Mbit {
			t.Errorf("%s: default %+v, C %+v; want both under the 5 Mbit/s AMBR, C with MBR 2", dir, def, c)
		}
		if a := got["A/"+dir]; a.GBR != 3_750_000 || a.SessionAMBR != 0 {
			t.Errorf("%s: A %+v, want GBR 3.75 Mbit/s outside the AMBR", dir, a)
		}
	}
	// Before the N2 update the downlink FARs create no outer header: TEID 0.
	if f := got["A/downlink"]; f.TEID != 0 {
		t.Errorf("downlink TEID before N2: %d, want 0", f.TEID)
	}
	for _, p := range problems {
		if p.Kind != WireQFI {
			t.Errorf("unexpected problem: %s", p)
		}
	}
	if NotAlone(problems) != 0 {
		t.Errorf("pdr mode: %d flows not enforced alone", NotAlone(problems))
	}

	// The N2 update: Update PDR and Update FAR add the gNB's TEID.
	s.N2 = true
	d = free5gc.Build(true, s)
	flows, _ = Build(d.QERs, d.PDRs, d.FARs, Options{MarkMode: gtp5g.MarkPDR})
	if f := names(flows, s)["C/downlink"]; f.TEID != 100 || f.Mark != free5gc.PDRMark(1, s.Find("C").PDRs[1]) {
		t.Errorf("after N2: C downlink %+v, want TEID 100 and its downlink PDR's mark", f)
	}
}

// Marks per mode: pdr keeps every flow apart; flow merges the non-GBR flows
// of a session (the AMBR QER gives their PDRs the QFI); qfi merges flows
// sharing a QFI, across sessions too. Each merge is named.
func TestFree5GCMarkModes(t *testing.T) {
	u, ue1, ue2 := free5gc.Quarter()
	u.AddFlow(ue1, free5gc.Flow{Name: "F", QFI: 5, MBR: 1 * free5gc.Mbit, DN: "192.168.100.5"})
	d := free5gc.Build(true, ue1, ue2)
	tests := []struct {
		mode gtp5g.MarkMode
		want []string // "flow shares-with flow", downlink
	}{
		{gtp5g.MarkPDR, nil},
		{gtp5g.MarkFlow, []string{"F C"}},
		{gtp5g.MarkQFI, []string{"C default1", "F default1", "default2 default1", "D A"}},
	}
	for _, tt := range tests {
		flows, problems := Build(d.QERs, d.PDRs, d.FARs, Options{MarkMode: tt.mode})
		n := names(flows, ue1, ue2)
		label := map[shaper.FlowID]string{}
		for k, f := range n {
			if f.Direction == shaper.Downlink {
				label[f.ID] = strings.TrimSuffix(k, "/downlink")
			}
		}
		var got []string
		for _, p := range problems {
			if p.Kind != SharedMark || !strings.HasPrefix(p.Detail, "downlink") {
				continue
			}
			other := ""
			for id, l := range label {
				if strings.Contains(p.Detail, "like flow "+id.String()+",") {
					other = l
				}
			}
			got = append(got, label[shaper.FlowID{SEID: p.SEID, QERID: p.QER}]+" "+other)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("mode %s: shared marks %v, want %v (problems %v)", tt.mode, got, tt.want, problems)
		}
		if tt.mode == gtp5g.MarkPDR {
			seen := map[uint32]bool{}
			for _, f := range flows {
				if f.Mark == 0 || seen[f.Mark] {
					t.Errorf("pdr mode: flow %s mark %#x missing or repeated", f.ID, f.Mark)
				}
				seen[f.Mark] = true
			}
		}
	}
}

// A flow removed with Remove PDR/FAR only leaves its QER behind: no flow,
// no problem. An Update QER changes the rate; deletion leaves nothing.
func TestFree5GCModifications(t *testing.T) {
	_, ue1, ue2 := free5gc.Quarter()
	ue1.RemoveFlow("C")
	d := free5gc.Build(true, ue1, ue2)
	flows, problems := Build(d.QERs, d.PDRs, d.FARs, Options{MarkMode: gtp5g.MarkPDR})
	n := names(flows, ue1, ue2)
	if _, ok := n["C/downlink"]; ok {
		t.Errorf("removed flow C still has a flow")
	}
	if def := n["default1/downlink"]; def.SessionAMBR != 5*free5gc.Mbit {
		t.Errorf("default flow after C left: %+v, want under the AMBR", def)
	}
	if len(problems) != 0 {
		t.Errorf("problems after removing C: %v", problems)
	}

	ue1.UpdateQER("A", 3*free5gc.Mbit, 4*free5gc.Mbit)
	d = free5gc.Build(true, ue1, ue2)
	flows, _ = Build(d.QERs, d.PDRs, d.FARs, Options{MarkMode: gtp5g.MarkPDR})
	if a := names(flows, ue1)["A/downlink"]; a.GBR != 3*free5gc.Mbit || a.MBR != 4*free5gc.Mbit {
		t.Errorf("after Update QER: A %+v, want 3/4 Mbit/s", a)
	}

	d = free5gc.Build(true, ue2) // UE 1's session deleted
	flows, _ = Build(d.QERs, d.PDRs, d.FARs, Options{MarkMode: gtp5g.MarkPDR})
	for _, f := range flows {
		if f.ID.SEID == ue1.SEID {
			t.Errorf("deleted session's flow %s remains", f.ID)
		}
	}
}

// The HTB tree of the quarter scenario in pdr mode: one session class per
// UE at its AMBR, the default flow and C under UE 1's, A, B and D under
// the link, every flow a class with its own mark.
func TestFree5GCTree(t *testing.T) {
	_, ue1, ue2 := free5gc.Quarter()
	d := free5gc.Build(true, ue1, ue2)
	flows, _ := Build(d.QERs, d.PDRs, d.FARs, Options{MarkMode: gtp5g.MarkPDR})
	pol := plan.DefaultPolicy(7_500_000)
	pol.NonGBRMin, pol.DefaultRate = 100_000, 100_000
	tree, probs := plan.Plan(shaper.FilterDirection(flows, shaper.Downlink), pol, nil)
	for _, p := range probs {
		if p.Severity == shaper.Error {
			t.Errorf("plan: %s", p)
		}
	}
	sessions := map[uint16]plan.Class{}
	byFlow := map[shaper.FlowID]plan.Class{}
	for _, c := range tree.Classes {
		switch c.Role {
		case shaper.RoleSession:
			sessions[c.Minor] = c
		case shaper.RoleFlow:
			byFlow[c.Flow] = c
		}
	}
	if len(sessions) != 2 || len(byFlow) != 6 {
		t.Fatalf("%d session classes and %d flow classes, want 2 and 6 (default1, A, B, C, default2, D)", len(sessions), len(byFlow))
	}
	check := func(id shaper.FlowID, parentAMBR, ceil uint64) {
		t.Helper()
		c, ok := byFlow[id]
		if !ok {
			t.Errorf("flow %s has no class", id)
			return
		}
		if parentAMBR == 0 && c.Parent != plan.LinkMinor {
			t.Errorf("flow %s under %d, want the link class", id, c.Parent)
		}
		if parentAMBR != 0 && sessions[c.Parent].Ceil != parentAMBR {
			t.Errorf("flow %s under class %d (ceil %d), want its session's AMBR %d", id, c.Parent, sessions[c.Parent].Ceil, parentAMBR)
		}
		if c.Ceil != ceil {
			t.Errorf("flow %s ceil %d, want %d", id, c.Ceil, ceil)
		}
	}
	check(shaper.FlowID{SEID: 1, QERID: ue1.DefaultQER}, 5_000_000, 5_000_000)
	check(shaper.FlowID{SEID: 1, QERID: ue1.Find("C").QER}, 5_000_000, 2_000_000)
	check(shaper.FlowID{SEID: 1, QERID: ue1.Find("A").QER}, 0, 4_500_000)
	check(shaper.FlowID{SEID: 2, QERID: ue2.Find("D").QER}, 0, 750_000)
	check(shaper.FlowID{SEID: 2, QERID: ue2.DefaultQER}, 1_000_000, 1_000_000)
	if a, dd := byFlow[shaper.FlowID{SEID: 1, QERID: ue1.Find("A").QER}], byFlow[shaper.FlowID{SEID: 2, QERID: ue2.Find("D").QER}]; a.Minor == dd.Minor || a.Mark == dd.Mark {
		t.Errorf("UE 2's D shares A's class or mark: %+v / %+v", a, dd)
	}
}
