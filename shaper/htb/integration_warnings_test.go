package htb

import (
	"context"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// A flow without the key its classifier binds by used to get a class no
// packet could reach, its GBR reserved, without a word. Apply now warns,
// naming the flow and the missing key and saying the GBR stays reserved;
// the flow keeps its class. The key depends on the classifier, so the
// backend says it: a mark for fw/bpf, a TEID for the GTP-U classifier.
func TestIntegrationUnreachableFlowWarned(t *testing.T) {
	l := newLab(t)
	flows := append(seedFlows(), shaper.Flow{ID: shaper.FlowID{SEID: 1, QERID: 9}, Name: "D", QFI: 5, Direction: shaper.Downlink, GBR: 2 * mbit, TEID: 0x77})
	be := l.open(Options{Leaf: plan.LeafFIFO})
	rep, err := be.Apply(context.Background(), flows, plan.DefaultPolicy(30*mbit).Shaper(), shaper.ApplyOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	var warned []shaper.Problem
	for _, p := range rep.Problems {
		if p.Kind == shaper.Unreachable {
			warned = append(warned, p)
		}
	}
	if len(warned) != 1 || warned[0].Severity != shaper.Warning || warned[0].Field != "mark" ||
		!strings.Contains(warned[0].Error(), "flow D (seid=1 qer=9)") || !strings.Contains(warned[0].Detail, "GBR 2mbit stays reserved") {
		t.Fatalf("problems %v; want one unreachable warning for flow D naming its mark and its reserved GBR", rep.Problems)
	}
	if _, ok := rep.FlowClass(shaper.FlowID{SEID: 1, QERID: 9}); !ok {
		t.Errorf("flow D lost its class: %v", rep.Classes)
	}
	// The GTP-U classifier binds by TEID: D has one, A/B/C do not.
	tree := mustPlan(t, flows, plan.DefaultPolicy(30*mbit), nil)
	tree.Classifier = classify.KindGTPU
	ps := UnreachableProblems(tree, gtpu.New(gtpu.Options{}).Downlink())
	if len(ps) != 3 || ps[0].Field != "teid" || !strings.Contains(ps[0].Detail, "classifier gtpu binds by teid") {
		t.Errorf("gtpu: %v; want A, B and C warned about their missing TEID", ps)
	}
}

// The same warning for flows that reach the backend through Update (the
// watch's path between full runs): a placed flow without a mark is
// warned about, a flow the update leaves alone keeps its warning, and a
// flow that gets its mark, or leaves, loses it. Only the placed flows are
// checked (nothing is read from the device).
func TestIntegrationUpdateWarnsUnreachable(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	be := l.open(Options{Leaf: plan.LeafFIFO, Incremental: true})
	defer be.Close()
	pol := plan.DefaultPolicy(30 * mbit)
	pol.Pool = 0
	unmarked := func(seid uint64, name string) shaper.Flow {
		return shaper.Flow{ID: shaper.FlowID{SEID: seid, QERID: 9}, Name: name, QFI: 5, Direction: shaper.Downlink, GBR: 1 * mbit}
	}
	if _, err := be.Apply(ctx, append(seedFlows(), unmarked(1, "D")), pol.Shaper(), shaper.ApplyOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	warned := func(rep shaper.Report) []string {
		var out []string
		for _, p := range rep.Problems {
			if p.Kind == shaper.Unreachable {
				out = append(out, p.Name)
			}
		}
		return out
	}
	e := unmarked(7, "E")
	marked := e
	marked.Mark = 0x70
	for _, st := range []struct {
		what    string
		changes map[uint64][]shaper.Flow
		want    string
	}{
		{"a new session's flow without a mark", map[uint64][]shaper.Flow{7: {e}}, "flow D (seid=1 qer=9),flow E (seid=7 qer=9)"},
		{"the flow gets its mark", map[uint64][]shaper.Flow{7: {marked}}, "flow D (seid=1 qer=9)"},
		{"the unmarked flow leaves", map[uint64][]shaper.Flow{1: seedFlows()}, ""},
	} {
		rep, err := be.Update(ctx, st.changes, pol.Shaper())
		if err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if got := strings.Join(warned(rep), ","); got != st.want {
			t.Errorf("%s: unreachable warnings for %q, want %q", st.what, got, st.want)
		}
	}
}

// Applying to a device that is down used to be silent. It still installs
// the tree (an operator may provision before bringing the link up), with a
// warning saying the device is down.
func TestIntegrationDeviceDownWarned(t *testing.T) {
	l := newLab(t)
	l.ns.Run(t, "ip", "link", "set", l.dev, "down")
	be := l.open(Options{Leaf: plan.LeafFIFO})
	rep, err := be.Apply(context.Background(), seedFlows(), plan.DefaultPolicy(30*mbit).Shaper(), shaper.ApplyOptions{Strict: true})
	if err != nil {
		t.Fatalf("apply to a down device: %v; want it installed", err)
	}
	var down []shaper.Problem
	for _, p := range rep.Problems {
		if p.Kind == shaper.DeviceDown {
			down = append(down, p)
		}
	}
	if len(down) != 1 || down[0].Severity != shaper.Warning || !strings.Contains(down[0].Error(), "dev "+l.dev) ||
		!strings.Contains(down[0].Detail, "is down") {
		t.Errorf("problems %v; want one warning that dev %s is down", rep.Problems, l.dev)
	}
	if got := len(l.tcClasses(t)); got != 5 {
		t.Errorf("%d classes on the down device, want the 5 of the tree", got)
	}
	// The peer down: the device is up but has no carrier.
	l.ns.Run(t, "ip", "link", "set", l.dev, "up")
	l.ns.Run(t, "ip", "link", "set", "gqb0", "down")
	rep, err = be.Apply(context.Background(), seedFlows(), plan.DefaultPolicy(30*mbit).Shaper(), shaper.ApplyOptions{Strict: true})
	if err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Detail, "no carrier") {
		t.Errorf("apply without carrier: %v, problems %v; want one no-carrier warning", err, rep.Problems)
	}
	l.ns.Run(t, "ip", "link", "set", "gqb0", "up")
	if rep, _ := be.Apply(context.Background(), seedFlows(), plan.DefaultPolicy(30*mbit).Shaper(), shaper.ApplyOptions{Strict: true}); len(rep.Problems) != 0 {
		t.Errorf("device up: problems %v, want none", rep.Problems)
	}
}
