package watch

import (
	"errors"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// findMetric returns the metric of family name whose label values include
// want ("": the family's first metric, for one without labels).
func findMetric(t testing.TB, m *Metrics, name, want string) (*dto.Metric, bool) {
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
			if want == "" || hasLabelValue(mt, want) {
				return mt, true
			}
		}
	}
	return nil, false
}

// counterValue returns the value of the counter family name whose label
// values include want (0 if none).
func counterValue(t testing.TB, m *Metrics, name, want string) float64 {
	t.Helper()
	mt, _ := findMetric(t, m, name, want)
	return mt.GetCounter().GetValue()
}

// gaugeValue returns the value of the gauge family name whose label values
// include want.
func gaugeValue(t testing.TB, m *Metrics, name, want string) (float64, bool) {
	t.Helper()
	mt, ok := findMetric(t, m, name, want)
	return mt.GetGauge().GetValue(), ok
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
	ap := &fakeBackend{dev: "n3"}
	m := NewMetrics()
	// Passing the metrics to New registers the engine's devices: their
	// class counters are read from the backends at scrape time.
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
	if got := counterValue(t, m, "gtpqos_source_dumps_total", ""); got != 1 {
		t.Errorf("source dumps = %v, want 1 (the start; the change event costs none)", got)
	}
	if got := counterValue(t, m, "gtpqos_changes_total", "tree"); got != 2 {
		t.Errorf("changes{object=tree} = %v, want 2 (the start and the change)", got)
	}
	if got, _ := gaugeValue(t, m, "gtpqos_flows", "n3"); got != 1 {
		t.Errorf("gtpqos_flows{dev=n3} = %v, want 1", got)
	}
	if got, _ := gaugeValue(t, m, "gtpqos_classes", "n3"); got != 3 {
		t.Errorf("gtpqos_classes{dev=n3} = %v, want 3 (link, default, one flow)", got)
	}
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var classOK bool
	series := 0
	for _, f := range fams {
		names = append(names, f.GetName())
		if f.GetName() == "gtpqos_class_sent_bytes_total" {
			for _, mt := range f.GetMetric() {
				series++
				classOK = hasLabelValue(mt, "9") && hasLabelValue(mt, "3") && hasLabelValue(mt, "5") &&
					hasLabelValue(mt, "1:10") && mt.GetCounter().GetValue() == 100
			}
		}
	}
	for _, want := range []string{"gtpqos_flows", "gtpqos_classes", "gtpqos_reconcile_duration_seconds", "gtpqos_class_drops_total"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("metric %s missing from %v", want, names)
		}
	}
	if !classOK || series != 1 {
		t.Errorf("gtpqos_class_sent_bytes_total: %d series, want one (flow classes only) labelled class=1:10 seid=9 qer=3 qfi=5 with value 100", series)
	}
	if up, ok := gaugeValue(t, m, "gtpqos_class_stats_up", "n3"); !ok || up != 1 {
		t.Errorf("gtpqos_class_stats_up{dev=n3} = %v (present %v), want 1", up, ok)
	}

	// Counters that cannot be read: the device says so, and no stale
	// series are exported.
	ap.mu.Lock()
	ap.countersErr = errors.New("link n3 not found")
	ap.mu.Unlock()
	if up, ok := gaugeValue(t, m, "gtpqos_class_stats_up", "n3"); !ok || up != 0 {
		t.Errorf("gtpqos_class_stats_up{dev=n3} = %v (present %v) with unreadable counters, want 0", up, ok)
	}
	if got := counterValue(t, m, "gtpqos_class_sent_bytes_total", "n3"); got != 0 {
		t.Errorf("class series exported with unreadable counters (%v bytes)", got)
	}
}

// TestServeMetricsLoopbackOnly: metrics name every subscriber's flows, so
// they are served on loopback only.
func TestServeMetricsLoopbackOnly(t *testing.T) {
	m := NewMetrics()
	for _, addr := range []string{"0.0.0.0:9477", "192.0.2.1:9477", ":9477", "nonsense"} {
		if srv, err := ServeMetrics(addr, m); err == nil {
			srv.Close()
			t.Errorf("metrics address %s accepted: metrics must stay on loopback", addr)
		}
	}
	srv, err := ServeMetrics("127.0.0.1:0", m)
	if err != nil {
		t.Fatalf("loopback: %v", err)
	}
	srv.Close()
}
