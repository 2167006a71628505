package watch

import (
	"errors"
	"slices"
	"testing"
)

// TestSyncKindReasons pins what the log and gtpqos_resyncs_total's reason
// label say of each kind of resync (docs/watch.md's metrics table), and
// that a poll gives way to the kind queued after it while any other kind
// keeps its name.
func TestSyncKindReasons(t *testing.T) {
	cases := []struct {
		k           syncKind
		cause       error
		log, metric string
	}{
		{syncStart, nil, "start", "start"},
		{syncReconnect, nil, "reconnect", "reconnect"},
		{syncLostEvents, nil, "lost events", "lost-events"},
		{syncLostEvents, errors.New("ENOBUFS"), "lost events: ENOBUFS", "lost-events"},
		{syncQueueFull, nil, "queue full: more change events queued than the engine keeps", "queue-full"},
		{syncEventFailed, errors.New("bad QER"), "events: bad QER", "events"},
		{syncRetry, nil, "retry", "retry"},
		{syncReload, nil, "reload", "reload"},
		{syncPeriodic, nil, "periodic", "periodic"},
	}
	for _, c := range cases {
		obs := &recObserver{}
		e := &Engine{obs: obs, opt: Options{Metrics: NewMetrics()}}
		e.reported(c.k, c.cause)
		want := []string{c.log}
		if c.k == syncRetry {
			want = nil // counted, not reported
		}
		if got := obs.resyncs; !slices.Equal(got, want) {
			t.Errorf("%v: observer told %q, want %q", c.k, got, want)
		}
		if got := counterValue(t, e.opt.Metrics, "gtpqos_resyncs_total", c.metric); got != 1 {
			t.Errorf("%v: gtpqos_resyncs_total{reason=%s} = %v, want 1", c.k, c.metric, got)
		}
	}

	e := &Engine{}
	e.markFull(syncPoll, nil)
	e.markFull(syncLostEvents, errors.New("ENOBUFS"))
	e.markFull(syncRetry, nil)
	e.markFull(syncPoll, nil)
	if p := e.take(); p.full.reason(p.fullErr) != "lost events: ENOBUFS" {
		t.Errorf("queued poll, lost events, retry, poll: the resync says %q, want the lost events", p.full.reason(p.fullErr))
	}
	if p := e.take(); p.full != syncNone {
		t.Errorf("take left %v queued", p.full)
	}
}
