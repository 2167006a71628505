package watch

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// findMetric returns the metric of family name whose label values include
// want ("": the family's first metric, for one without labels).
func findMetric(t testing.TB, m *Metrics, name, want string) (*dto.Metric, bool) {
	t.Helper()
	for _, f := range scrape(t, m) {
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

// scrape reads m as ServeMetrics serves it, parsed back (which fails on
// text the format does not allow, a family written twice for one).
func scrape(t testing.TB, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	var b bytes.Buffer
	if err := m.WriteText(&b); err != nil {
		t.Fatalf("write metrics: %v", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&b)
	if err != nil {
		t.Fatalf("the metrics do not parse: %v\n%s", err, b.String())
	}
	return fams
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
	fams := scrape(t, m)
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

// TestMetricsServedOverHTTP scrapes the handler as Prometheus does, plain
// and gzipped: the class series arrive, with a device name's quote and
// backslash escaped.
func TestMetricsServedOverHTTP(t *testing.T) {
	src := newScriptedSource()
	src.set(9, flow(9, 3, 5, 1e6, 2e6))
	dev := `n3"x\y`
	ap := &fakeBackend{dev: dev}
	m := NewMetrics()
	startEngine(t, Options{Source: src, Downlink: ap, Resync: time.Hour, Metrics: m})
	eventually(t, 5*time.Second, "start", converged(src, ap))
	srv := httptest.NewServer(metricsHandler(m))
	defer srv.Close()
	for _, gz := range []bool{false, true} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		// A transport that leaves the body as sent (it would gunzip it).
		res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if v := res.Header.Get("Vary"); v != "Accept-Encoding" {
			t.Errorf("Vary %q, want Accept-Encoding (the reply depends on it)", v)
		}
		body := io.Reader(res.Body)
		if gz {
			if res.Header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("asked for gzip, got Content-Encoding %q", res.Header.Get("Content-Encoding"))
			}
			if body, err = gzip.NewReader(res.Body); err != nil {
				t.Fatal(err)
			}
		}
		text, err := io.ReadAll(body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
			t.Fatalf("scrape (gzip %v): %v, status %d, content type %q", gz, err, res.StatusCode, res.Header.Get("Content-Type"))
		}
		want := `gtpqos_class_sent_bytes_total{dev="n3\"x\\y",class="1:10",seid="9",qer="3",qfi="5"} 100`
		if !strings.Contains(string(text), want+"\n") {
			t.Errorf("scrape (gzip %v) lacks %s:\n%s", gz, want, text)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		if _, err := p.TextToMetricFamilies(bytes.NewReader(text)); err != nil {
			t.Errorf("scrape (gzip %v) does not parse: %v", gz, err)
		}
	}
}

// TestAcceptsGzip: a reply is gzipped when the request accepts gzip with a
// quality above zero, the coding named in any case.
func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"":                      false,
		"gzip":                  true,
		"GZip":                  true,
		"deflate, gzip;q=0.5":   true,
		"gzip;q=0":              false,
		"gzip; q=0.0, identity": false,
		"gzip;q=abc":            false,
		"br, identity":          false,
		"x-gzip":                false,
	} {
		r, _ := http.NewRequest("GET", "/metrics", nil)
		if h != "" {
			r.Header.Set("Accept-Encoding", h)
		}
		if got := acceptsGzip(r); got != want {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", h, got, want)
		}
	}
}
