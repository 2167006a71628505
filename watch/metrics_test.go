package watch

import (
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// counterValue returns the value of the counter family name whose label
// values include want.
func counterValue(t testing.TB, m *Metrics, name, want string) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			if hasLabelValue(mt, want) {
				return mt.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func hasLabelValue(mt *dto.Metric, v string) bool {
	for _, l := range mt.GetLabel() {
		if l.GetValue() == v {
			return true
		}
	}
	return false
}

func TestMetricsExposeEngineAndClassCounters(t *testing.T) {
	src := newScriptedSource()
	src.set(9, flow(9, 3, 5, 1e6, 2e6))
	ap := &fakeApplier{dev: "n3"}
	m := NewMetrics()
	m.WatchClasses(ap)
	startEngine(t, Options{Source: src, Downlink: ap, Resync: time.Hour, Metrics: m})
	eventually(t, 5*time.Second, "start", converged(src, ap))
	src.change(9, flow(9, 3, 5, 1e6, 3e6))
	eventually(t, 5*time.Second, "change", converged(src, ap))

	if got := counterValue(t, m, "gtpqos_reconcile_runs_total", "ok"); got < 2 {
		t.Errorf("reconcile runs ok = %v, want >= 2", got)
	}
	if got := counterValue(t, m, "gtpqos_events_total", "change"); got != 1 {
		t.Errorf("events{kind=change} = %v, want 1", got)
	}
	if got := counterValue(t, m, "gtpqos_resyncs_total", "start"); got != 1 {
		t.Errorf("resyncs{reason=start} = %v, want 1", got)
	}
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var classOK bool
	for _, f := range fams {
		names = append(names, f.GetName())
		if f.GetName() == "gtpqos_class_sent_bytes_total" {
			for _, mt := range f.GetMetric() {
				classOK = hasLabelValue(mt, "9") && hasLabelValue(mt, "3") && hasLabelValue(mt, "5") &&
					mt.GetCounter().GetValue() == 100
			}
		}
	}
	for _, want := range []string{"gtpqos_flows", "gtpqos_classes", "gtpqos_reconcile_duration_seconds", "gtpqos_class_drops_total"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("metric %s missing from %v", want, names)
		}
	}
	if !classOK {
		t.Errorf("gtpqos_class_sent_bytes_total has no series labelled seid=9 qer=3 qfi=5 with value 100")
	}
}
