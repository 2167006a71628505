package backends

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

func TestOpenRefusesUnknownBackendAndDevice(t *testing.T) {
	if _, err := Open("lo", Options{Backend: "nosuch"}); err == nil || err.Error() != `unknown backend "nosuch" (known: `+strings.Join(Names(), ", ")+")" {
		t.Errorf("unknown backend: %v, want one line listing the known ones", err)
	}
	if _, err := Open("gqnosuchdev0", Options{}); err == nil || !strings.Contains(err.Error(), "gqnosuchdev0") {
		t.Errorf("missing device: %v, want an error naming it", err)
	}
	if _, err := Open("", Options{}); err == nil {
		t.Error("no device: want an error")
	}
}

func TestPlanRendersWithoutDevice(t *testing.T) {
	pol := shaper.DefaultPolicy(30_000_000)
	flows := []shaper.Flow{{ID: shaper.FlowID{SEID: 1, QERID: 1}, QFI: 2, Direction: shaper.Downlink, GBR: 15e6, MBR: 18e6, Mark: 2}}
	p, err := Plan(flows, pol, shaper.Downlink)
	if err != nil || len(p.Problems) != 0 {
		t.Fatalf("plan: %v, %v", err, p.Problems)
	}
	out := p.Render("eth1")
	for _, want := range []string{"tc qdisc replace dev eth1 root handle 6771: stab overhead -58 linklayer ethernet htb default 2",
		"rate 30mbit ceil 30mbit overhead 58 ", "rate 15mbit ceil 18mbit burst"} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(p.Accounting, "accounting packet") || !strings.Contains(p.Accounting, "= 58") {
		t.Errorf("accounting line %q, want packet with the N3 overhead 58 spelt out", p.Accounting)
	}
	// An uplink (N6) tree takes off the Ethernet header only.
	up, _ := Plan(flows, pol, shaper.Uplink)
	if out := up.Render("eth1"); !strings.Contains(out, "stab overhead -14 ") || !strings.Contains(out, "overhead 14 ") {
		t.Errorf("uplink plan: want overhead 14:\n%s", out)
	}
	pol.Backend = "nosuch"
	if _, err := Plan(flows, pol, shaper.Downlink); err == nil {
		t.Error("plan with an unknown backend: want an error")
	}
}

// Check refuses what the HTB backend cannot enforce before anything is
// opened, and says how packets will be bound.
func TestCheckRefusesGTPUWhereItCannotWork(t *testing.T) {
	pol, err := Override(shaper.DefaultPolicy(30e6), shaper.Knobs{"classifier": "gtpu"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(pol, Options{Marks: Marked}); err == nil || !strings.Contains(err.Error(), "classifier gtpu is for stock gtp5g") {
		t.Errorf("gtpu with marked packets: %v", err)
	}
	if _, err := Check(pol, Options{Direction: shaper.Uplink}); err == nil || !strings.Contains(err.Error(), "N3 device's ingress program") {
		t.Errorf("gtpu on uplink without the shared classifier: %v", err)
	}
	if how, err := Check(shaper.DefaultPolicy(30e6), Options{Marks: Unmarked}); err != nil || !strings.Contains(how, "gtpu") {
		t.Errorf("unmarked packets: %q, %v; want the GTP-U classifier", how, err)
	}
	if how, err := Check(shaper.DefaultPolicy(30e6), Options{Marks: Marked}); err != nil || how != "classifier auto by mark" {
		t.Errorf("marked packets: %q, %v", how, err)
	}
	if _, err := Override(pol, shaper.Knobs{"classifier": "fww"}); err == nil || !strings.HasPrefix(err.Error(), `classifier: unknown classifier "fww"`) {
		t.Errorf("bad override: %v, want one line naming the knob", err)
	}
}

// A reload keeps the running policy's classifier, and only that.
func TestKeepBindingKeepsTheClassifierOnly(t *testing.T) {
	running, _ := Override(shaper.DefaultPolicy(30e6), shaper.Knobs{"classifier": "gtpu"})
	next, _ := Override(shaper.DefaultPolicy(50e6), shaper.Knobs{"classifier": "bpf", "burst": "64k"})
	got := KeepBinding(running, next).BackendKnobs.Of("htb")
	if got["classifier"] != "gtpu" || got["burst"] != "64k" {
		t.Errorf("kept knobs %v, want classifier gtpu and the new burst", got)
	}
}

// The edt backend takes unmarked packets (stock gtp5g): by (TEID, QFI) on
// N3, by the N3 ingress program's marks on N6, which needs the shared
// classifier; marked packets by mark.
func TestCheckEDT(t *testing.T) {
	pol := shaper.DefaultPolicy(30e6)
	pol.Backend = "edt"
	if how, err := Check(pol, Options{Marks: Unmarked}); err != nil || !strings.Contains(how, "(TEID, QFI)") {
		t.Errorf("unmarked: %q, %v", how, err)
	}
	if how, err := Check(pol, Options{Marks: Unmarked, Direction: shaper.Uplink, Shared: NewShared("n3")}); err != nil || !strings.Contains(how, "marks on N6") {
		t.Errorf("unmarked uplink with the shared classifier: %q, %v", how, err)
	}
	if _, err := Check(pol, Options{Marks: Unmarked, Direction: shaper.Uplink}); err == nil || !strings.Contains(err.Error(), "N3 device's ingress program") {
		t.Errorf("unmarked uplink alone: %v", err)
	}
	if how, err := Check(pol, Options{Marks: Marked}); err != nil || how != "edt program by mark" {
		t.Errorf("marked: %q, %v", how, err)
	}
}
