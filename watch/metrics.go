package watch

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/free5gc/gtpqos/shaper"
)

// Metrics are the daemon's Prometheus metrics, on a registry of their own
// (no Go runtime or process collectors unless the caller adds them). A nil
// *Metrics is valid and records nothing.
type Metrics struct {
	// Registry holds the engine's metrics; the per-class counters are
	// not in it but written by WriteText (ServeMetrics serves both).
	Registry *prometheus.Registry

	flows     *prometheus.GaugeVec
	notAlone  *prometheus.GaugeVec
	classes   *prometheus.GaugeVec
	spare     *prometheus.GaugeVec
	runs      *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	changes   *prometheus.CounterVec
	events    *prometheus.CounterVec
	resyncs   *prometheus.CounterVec
	polls     prometheus.Counter
	dumps     prometheus.Counter
	errors    *prometheus.CounterVec
	classStat *classCollector
}

// NewMetrics creates the metrics on a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		flows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gtpqos_flows", Help: "QoS flows in the last plan, per device.",
		}, []string{"dev"}),
		notAlone: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gtpqos_flows_not_alone",
			Help: "QoS flows of the last plan not enforced in a class of their own, per device: their mark (or TEID and QFI) is another flow's, so their packets go to that flow's class (see gtpqos status for which and why).",
		}, []string{"dev"}),
		spare: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gtpqos_spare_classes", Help: "Spare classes kept ready for new flows, per device (the pool's background build).",
		}, []string{"dev"}),
		classes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gtpqos_classes", Help: "Classes in the desired tree, per device.",
		}, []string{"dev"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gtpqos_reconcile_runs_total", Help: "Reconcile runs, per device and result (ok, error).",
		}, []string{"dev", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gtpqos_reconcile_duration_seconds",
			Help:    "Time to plan and reconcile one device.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. 16 s
		}, []string{"dev"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gtpqos_changes_total", Help: "Kernel writes made by reconciles, per device, operation and object.",
		}, []string{"dev", "op", "object"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gtpqos_events_total", Help: "Change events received from gtp5g, per kind (change, resync).",
		}, []string{"kind"}),
		resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gtpqos_resyncs_total", Help: "Resyncs, per reason (start, periodic, lost-events, retry, reconnect, reload); each reads the devices back, all but periodic ones dump gtp5g too.",
		}, []string{"reason"}),
		polls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gtpqos_polls_total", Help: "Snapshot polls (stock gtp5g, no events).",
		}),
		dumps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gtpqos_source_dumps_total",
			Help: "Full reads of the source (gtp5g: a dump of every QER, PDR and FAR): at start, on resyncs and polls; a change event costs none.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gtpqos_errors_total", Help: "Failures, per stage (source, events, or a device name).",
		}, []string{"stage"}),
		classStat: &classCollector{},
	}
	m.Registry.MustRegister(m.flows, m.notAlone, m.classes, m.spare, m.runs, m.duration, m.changes,
		m.events, m.resyncs, m.polls, m.dumps, m.errors)
	return m
}

// watchClasses exports the per-class counters of d's device, read at
// scrape time.
func (m *Metrics) watchClasses(d *device) {
	if m == nil {
		return
	}
	m.classStat.mu.Lock()
	m.classStat.devs = append(m.classStat.devs, d)
	m.classStat.mu.Unlock()
}

func (m *Metrics) applied(dev string, res shaper.Report, took time.Duration, err error) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(dev).Observe(took.Seconds())
	if err != nil {
		m.runs.WithLabelValues(dev, "error").Inc()
		return
	}
	m.runs.WithLabelValues(dev, "ok").Inc()
	m.flows.WithLabelValues(dev).Set(float64(res.Flows))
	m.notAlone.WithLabelValues(dev).Set(float64(notAlone(res.Problems)))
	m.classes.WithLabelValues(dev).Set(float64(res.ClassCount))
	for _, c := range res.Changes {
		m.changes.WithLabelValues(dev, c.Op, c.Object).Inc()
	}
}

// spares records how many spare classes a device has ready.
func (m *Metrics) spares(dev string, n int) {
	if m != nil {
		m.spare.WithLabelValues(dev).Set(float64(n))
	}
}

func (m *Metrics) event(k EventKind) {
	if m != nil {
		m.events.WithLabelValues(k.String()).Inc()
	}
}

func (m *Metrics) resync(reason string) {
	if m == nil {
		return
	}
	// Keep the label set small: "lost events: ENOBUFS" -> "lost-events".
	if i := strings.IndexByte(reason, ':'); i >= 0 {
		reason = reason[:i]
	}
	m.resyncs.WithLabelValues(strings.ReplaceAll(reason, " ", "-")).Inc()
}

func (m *Metrics) poll() {
	if m != nil {
		m.polls.Inc()
	}
}

func (m *Metrics) dumped() {
	if m != nil {
		m.dumps.Inc()
	}
}

func (m *Metrics) failed(stage string) {
	if m != nil {
		m.errors.WithLabelValues(stage).Inc()
	}
}

// notAlone counts the flows a plan refused because another flow holds
// their key: their packets carry that flow's mark (or TEID and QFI) and
// are enforced in its class.
func notAlone(ps []shaper.Problem) int {
	n := 0
	for _, p := range ps {
		if p.Kind == shaper.DuplicateMark || p.Kind == shaper.DuplicateTEID {
			n++
		}
	}
	return n
}
