package edtbackend

import (
	"errors"
	"os"
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
