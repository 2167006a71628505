package backends

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

func TestOpenRefusesUnknownBackendAndDevice(t *testing.T) {
	if _, err := Open("lo", Options{Backend: "edt"}); err == nil || !strings.Contains(err.Error(), `unknown backend "edt"`) {
		t.Errorf("unknown backend: %v", err)
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
	p, err := Plan(flows, pol)
	if err != nil || len(p.Problems) != 0 {
		t.Fatalf("plan: %v, %v", err, p.Problems)
	}
	out := p.Render("eth1")
	for _, want := range []string{"tc qdisc replace dev eth1 root handle 6771: htb default 2", "rate 15mbit ceil 18mbit"} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
	pol.Backend = "edt"
	if _, err := Plan(flows, pol); err == nil {
		t.Error("plan with an unknown backend: want an error")
	}
}
