package lab_test

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/lab/ab"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// TestLabSweepContracts runs the sweep's MBR and GBR scenarios at 100- and
// 1200-byte payloads with packet accounting (one 9 s run each, seconds 5-8,
// a tenth of the rates unless GTPQOS_LAB_RATE_SCALE says otherwise) and
// asserts every contract within 1% of the user's IP packets: a flow offered
// 2 × MBR receives its MBR and loses 50% of its offer, one offered
// 0.99 × MBR is never dropped by the shaper, a GBR = MBR flow next to a
// greedy best-effort flow receives its GBR. With frame accounting the
// 100-byte MBR flow gets what counting frames gives: 128/186 of its MBR.
func TestLabSweepContracts(t *testing.T) {
	testenv.SkipShort(t)
	cfg := lab.Config{N3QueueLen: ab.SweepQueueLen}
	if os.Getenv(lab.RateScaleEnv) == "" {
		cfg.RateScale = 0.1
	}
	l, target := labTarget(t, cfg, ab.LabOptions{Generator: lab.TrafficBuiltin})
	ctx := context.Background()
	o := ab.SweepOptions{Payloads: []int{100, 1200}, Scenarios: []string{"mbr", "gbr"}, Units: []shaper.Accounting{shaper.AccountPacket},
		Duration: 9 * time.Second, WindowStart: 5 * time.Second, WindowEnd: 8 * time.Second, Tolerance: 0.01}
	res, err := ab.Sweep(ctx, target, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Payloads, o.Scenarios, o.Units = []int{100}, []string{"mbr"}, []shaper.Accounting{shaper.AccountFrame}
	frame, err := ab.Sweep(ctx, target, o)
	if err != nil {
		t.Fatal(err)
	}
	res.Runs = append(res.Runs, frame.Runs...)
	var table strings.Builder
	if err := ab.WriteSweepTable(&table, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	if len(res.Runs) != 5 {
		t.Fatalf("%d runs, want 5", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.Unit != "packet" {
			continue
		}
		for _, c := range r.Checks {
			if !c.OK {
				t.Errorf("payload %d, %s: %s: %s", r.Payload, r.Scenario, c.Name, c.Detail)
			}
		}
	}
	for _, f := range frame.Runs[0].Flows {
		want := l.Scale() * ab.MBRScenarioMBR / 1e6 * 128 / 186
		if f.Name == "A" && math.Abs(f.IP/want-1) > 0.01 {
			t.Errorf("frame accounting, 100-byte payload: A %.4f Mbit/s of IP packets, want 128/186 of its MBR: %.4f", f.IP, want)
		}
	}
}
