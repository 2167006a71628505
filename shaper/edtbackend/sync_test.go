package edtbackend

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edt"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// Unmarked flows' keys go into the maps and are read back: a second sync
// over the maps (not the last plan) writes nothing; a flow whose TEID
// changes moves its key; a flow gone takes its key along. No tree, so no
// sch_fq: this runs on the host.
func TestSyncMapsKeys(t *testing.T) {
	testenv.RequireRoot(t)
	pc, err := edt.Load(edt.LoadOptions{Sessions: 16, Flows: 16, Marks: 16, Keys: 16})
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, ebpf.ErrNotSupported) {
			t.Skipf("kernel refuses to load BPF programs: %v", err)
		}
		t.Fatal(err)
	}
	defer pc.Close()
	b := &Backend{dev: "test0"}
	fl := testFlows()
	for i := range fl[:2] {
		fl[i].Mark, fl[i].TEID = 0, 100+uint32(i)
	}
	sync := func(p *Plan, fresh bool) shaper.Report {
		t.Helper()
		var rep shaper.Report
		if err := b.syncMaps(pc, fresh, p, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	p := MakePlan(fl, testPolicy())
	if rep := sync(p, true); rep.Writes != 5 { // session, three flows, default class
		t.Errorf("first sync: %d writes %v, want 5", rep.Writes, rep.Changes)
	}
	if rep := sync(MakePlan(fl, testPolicy()), false); rep.Writes != 0 {
		t.Errorf("second sync: %d writes %v, want none", rep.Writes, rep.Changes)
	}
	fs, err := pc.ReadFlows()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Flows {
		got := fs[f.ID].Spec
		if !edt.SameKeys(got.Keys, f.Spec.Keys) || len(got.Marks) != len(f.Spec.Marks) {
			t.Errorf("flow %s: maps hold marks %v keys %v, want %v %v", f.Flow.Name, got.Marks, got.Keys, f.Spec.Marks, f.Spec.Keys)
		}
	}
	fl[0].TEID = 200
	if rep := sync(MakePlan(fl, testPolicy()), false); rep.Writes != 2 {
		t.Errorf("TEID changed: %d writes %v, want the flow removed and added", rep.Writes, rep.Changes)
	}
	fs, _ = pc.ReadFlows()
	if got := fs[p.Flows[0].ID].Spec.Keys; len(got) != 1 || got[0].TEID != 200 {
		t.Errorf("flow A's keys %v, want teid 200", got)
	}
	if rep := sync(MakePlan(fl[1:], testPolicy()), false); rep.Writes != 1 {
		t.Errorf("flow A gone: %d writes %v, want 1", rep.Writes, rep.Changes)
	}
	fs, _ = pc.ReadFlows()
	if _, ok := fs[p.Flows[0].ID]; ok || len(fs) != 2 {
		t.Errorf("flows left %v, want B and G", fs)
	}
}

// The sessions' SDF rules become the rules map, each rule valued in its
// flow's id (0 for a flow the plan does not pace): a second sync over the
// maps writes nothing; a changed rule set rewrites its TEID, no rules
// delete it; status's view of the program counts its flows and the TEIDs
// with rules; a plan whose TEIDs do not fit the map is refused.
func TestSyncMapsSDFRules(t *testing.T) {
	testenv.RequireRoot(t)
	pc, err := edt.Load(edt.LoadOptions{Sessions: 16, Flows: 16, Marks: 16, Keys: 16, Rules: 16})
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, ebpf.ErrNotSupported) {
			t.Skipf("kernel refuses to load BPF programs: %v", err)
		}
		t.Fatal(err)
	}
	defer pc.Close()
	b := &Backend{dev: "test0"}
	fl := testFlows()
	for i := range fl[:2] {
		fl[i].Mark, fl[i].TEID = 0, 100
	}
	rule := func(qer uint32, src byte) shaper.SDFRule {
		return shaper.SDFRule{Flow: shaper.FlowID{SEID: 1, QERID: qer}, Proto: 0xff, Src: [4]byte{192, 168, 100, src}, SrcMask: [4]byte{255, 255, 255, 255}}
	}
	rules := []shaper.SessionRules{{Direction: shaper.Downlink, TEID: 100, SEID: 1, Rules: []shaper.SDFRule{rule(1, 2), rule(2, 3), rule(7, 4)}}}
	plan := func(rs []shaper.SessionRules) *Plan {
		p := MakePlan(fl, testPolicy())
		if notes := planRules(p, rs); len(notes) != 0 {
			t.Fatalf("notes %v", notes)
		}
		return p
	}
	sync := func(p *Plan, fresh bool) shaper.Report {
		t.Helper()
		var rep shaper.Report
		if err := b.syncMaps(pc, fresh, p, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	p := plan(rules)
	r := p.Rules[100]
	if r.N != 3 || r.R[0].Value != p.Flows[0].ID || r.R[1].Value != p.Flows[1].ID || r.R[2].Value != 0 {
		t.Fatalf("rules of TEID 100: %d, values %#x %#x %#x; want A's id %#x, B's %#x, 0", r.N, r.R[0].Value, r.R[1].Value, r.R[2].Value, p.Flows[0].ID, p.Flows[1].ID)
	}
	if rep := sync(p, true); rep.Writes != 6 { // session, three flows, the rules, default class
		t.Errorf("first sync: %d writes %v, want 6", rep.Writes, rep.Changes)
	}
	if rep := sync(plan(rules), false); rep.Writes != 0 {
		t.Errorf("second sync: %d writes %v, want none", rep.Writes, rep.Changes)
	}
	var in shaper.Inspection
	if err := b.inspectMaps(pc, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Attachments) != 1 || in.Attachments[0].Entries != 3 || in.Attachments[0].SDFTEIDs != 1 || in.Attachments[0].ProgramID == 0 {
		t.Errorf("inspection's program: %+v; want 3 flows and the SDF rules of 1 TEID", in.Attachments)
	}
	rules[0].Rules = rules[0].Rules[:2]
	if rep := sync(plan(rules), false); rep.Writes != 1 {
		t.Errorf("a rule fewer: %d writes %v, want 1", rep.Writes, rep.Changes)
	}
	if rep := sync(plan(nil), false); rep.Writes != 1 {
		t.Errorf("no rules: %d writes %v, want the TEID deleted", rep.Writes, rep.Changes)
	}
	if rs, err := pc.ReadRules(); err != nil || len(rs) != 0 {
		t.Errorf("rules left %v, %v", rs, err)
	}
	err = fits(plan(rules), edt.LoadOptions{Sessions: 4, Flows: 8, Marks: 8, Keys: 8})
	if err == nil || !strings.Contains(err.Error(), "1 rules do not fit in the program's rules map (room for 0") {
		t.Errorf("rules in a map without room: %v", err)
	}
}
