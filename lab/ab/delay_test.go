package ab

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/shaper"
)

// Delay statistics over the window: nearest-rank percentiles of the
// packets sent in it, jitter as the mean |ΔD| of consecutive arrivals, and
// the window's reordered packets.
func TestDelayStats(t *testing.T) {
	delays := [][]float32{{500}, {1, 3, 2, 4}, {10}, {900}}
	st := delayStats(delays, []int64{7, 1, 2, 9}, 1, 3)
	if st == nil || st.Samples != 5 || st.P50 != 3 || st.P99 != 10 || st.Max != 10 || st.Reordered != 3 {
		t.Fatalf("stats %+v: want 5 samples, p50 3, p99 = max 10, 3 reordered", st)
	}
	// |3-1| + |2-3| + |4-2| + |10-4| = 11 over 4 differences.
	if st.Jitter != 11.0/4 {
		t.Errorf("jitter %v, want 2.75", st.Jitter)
	}
	if delayStats(delays, nil, 5, 9) != nil || delayStats(nil, nil, 0, 3) != nil {
		t.Error("no packets in the window: want nil (not measured)")
	}
	m := meanDelay([]*DelayStats{nil, {P99: 2, Reordered: 1}, {P99: 4, Reordered: 3}})
	if m == nil || m.P99 != 3 || m.Reordered != 2 || meanDelay([]*DelayStats{nil}) != nil {
		t.Errorf("mean over runs %+v", m)
	}
}

// A lab run's delays reach the table, results.csv (new columns after the
// old ones) and fig4-delay.svg; a run without them keeps the old outputs.
func TestDelayOutputs(t *testing.T) {
	res := seedResults(9.331, 5.863)
	for i := range res.RunList {
		for j := range res.RunList[i].Flows {
			res.RunList[i].Flows[j].Delay = &DelayStats{Samples: 100, P50: 0.05, P99: float64(10 * (j + 1)), P999: 25, Max: 1580, Jitter: 0.2}
		}
	}
	res.Arms = Summarise(res, seedArms(), 1)
	var b strings.Builder
	if err := WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "one-way delay") || !strings.Contains(b.String(), "0.050 / 20.0 / 25.0 / 1580, jitter 0.200, reordered 0") {
		t.Errorf("table lacks flow B's delay:\n%s", b.String())
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := WriteFiles(dir, res); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(filepath.Join(dir, "results.csv"))
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 2 || rows[0][14] != "aggregate_mbps" || rows[0][17] != "delay_p99_ms" || rows[2][17] != "20.0000" {
		t.Fatalf("results.csv: %v, header %v, row %v", err, rows[0], rows[2])
	}
	svg, err := os.ReadFile(filepath.Join(dir, "fig4-delay.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if n := parseSVG(t, svg)["rect"]; n < 1+2*3 {
		t.Errorf("fig4-delay.svg: %d rects, want the background and a bar per arm and flow", n)
	}
	res = seedResults(9.331, 5.863)
	b.Reset()
	_ = WriteTable(&b, res)
	if strings.Contains(b.String(), "one-way delay") {
		t.Errorf("table shows delay that was not measured:\n%s", b.String())
	}
}

// The lab demo reproduces the seed's rates: its arms get the rate
// experiments' budget; arms given by name keep their files' budget.
func TestDemoArmsGetTheRateBudget(t *testing.T) {
	t.Chdir("../..") // the demo's arms are relative to the repository root
	s := Spec{Lab: true, Demo: true, Payload: 1200, Traffic: lab.TrafficBuiltin}
	o, err := s.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range o.Arms {
		if a.Policy.DelayBudget != RateBudget {
			t.Errorf("demo arm %s: budget %v, want %v", a.Name, a.Policy.DelayBudget, RateBudget)
		}
	}
	if o, err = s.Options([]string{"examples/seed-aware.yaml"}); err != nil || o.Arms[0].Policy.DelayBudget != shaper.DefaultDelayBudget {
		t.Errorf("an arm given by name: %v, budget %v; want the default", err, o.Arms[0].Policy.DelayBudget)
	}
}
