package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
)

// chanStream hands out receive results: those it was made with, then those
// the test sends; it blocks when there are none, until closed.
type chanStream struct {
	steps chan streamStep
	once  sync.Once
	done  chan struct{}
}

type streamStep struct {
	evs []gtpnl.Event
	err error
}

func newChanStream(script ...streamStep) *chanStream {
	c := &chanStream{steps: make(chan streamStep, len(script)+8), done: make(chan struct{})}
	for _, st := range script {
		c.steps <- st
	}
	return c
}

func (c *chanStream) Receive() ([]gtpnl.Event, error) {
	select {
	case st := <-c.steps:
		return st.evs, st.err
	case <-c.done:
		return nil, errors.New("use of closed socket")
	}
}

func (c *chanStream) Close() error { c.once.Do(func() { close(c.done) }); return nil }

// closed says whether Close was called.
func (c *chanStream) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// fakeConn is a gtpnl client with canned dumps.
type fakeConn struct {
	qers     []gtpnl.QER
	dumpErr  error
	aliveErr error
	subErr   error
	stream   eventStream
	mu       sync.Mutex
	closed   bool
}

func (c *fakeConn) QERs() ([]gtpnl.QER, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.qers), c.dumpErr
}

func (c *fakeConn) setQERs(qers ...gtpnl.QER) {
	c.mu.Lock()
	c.qers = qers
	c.mu.Unlock()
}
func (c *fakeConn) PDRs() ([]gtpnl.PDR, error) { return nil, nil }
func (c *fakeConn) FARs() ([]gtpnl.FAR, error) { return nil, nil }
func (c *fakeConn) Alive() error               { return c.aliveErr }
func (c *fakeConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}
func (c *fakeConn) subscribe(ctx context.Context, _ int) (eventStream, error) {
	if c.subErr != nil {
		return nil, c.subErr
	}
	return c.stream, nil
}

// qerView turns each QER into one downlink flow.
func qerView(qers []gtpnl.QER, _ []gtpnl.PDR, _ []gtpnl.FAR) ([]shaper.Flow, []qosview.Problem) {
	var out []shaper.Flow
	var problems []qosview.Problem
	slices.SortFunc(qers, func(a, b gtpnl.QER) int {
		return shaper.CompareFlowID(shaper.FlowID{SEID: a.SEID, QERID: a.ID}, shaper.FlowID{SEID: b.SEID, QERID: b.ID})
	})
	for _, q := range qers {
		if q.QFI == 0 {
			problems = append(problems, qosview.Problem{Kind: qosview.DanglingQER, SEID: q.SEID, QER: q.ID, Detail: "no QFI"})
			continue
		}
		out = append(out, flow(q.SEID, q.ID, q.QFI, 0, 1e6))
	}
	return out, problems
}

// TestGTP5GSourceModelFollowsEvents checks the per-session rule model: a
// dump sets it, each event changes one session's rules and yields that
// session's flows alone, a delete of the last rule empties the session,
// and events a dump already reflects replay to the same state.
func TestGTP5GSourceModelFollowsEvents(t *testing.T) {
	conn := &fakeConn{qers: []gtpnl.QER{{SEID: 1, ID: 1, QFI: 2}, {SEID: 2, ID: 1, QFI: 3}}}
	var reported [][]string
	src := &GTP5GSource{View: qerView, OnViewProblems: func(p []string) { reported = append(reported, p) },
		dialConn: func() (gtp5gConn, error) { return conn, nil }}
	if flows, err := src.Snapshot(context.Background()); err != nil || len(flows) != 2 {
		t.Fatalf("snapshot: %v, %v", flows, err)
	}
	ev := func(op gtpnl.EventOp, q gtpnl.QER) Event {
		return Event{Kind: EventChange, SEID: q.SEID, Change: gtpnl.Event{Op: op, QER: &q}}
	}
	ids := func(fl []shaper.Flow) string {
		var s []string
		for _, f := range fl {
			s = append(s, fmt.Sprintf("%d/%d", f.ID.SEID, f.ID.QERID))
		}
		return strings.Join(s, " ")
	}
	steps := []struct {
		ev   Event
		want string
	}{
		{ev(gtpnl.EventAdd, gtpnl.QER{SEID: 1, ID: 2, QFI: 4}), "1/1 1/2"},
		{ev(gtpnl.EventUpdate, gtpnl.QER{SEID: 1, ID: 1, QFI: 5}), "1/1 1/2"},
		{ev(gtpnl.EventDelete, gtpnl.QER{SEID: 2, ID: 1}), ""},
		{ev(gtpnl.EventAdd, gtpnl.QER{SEID: 3, ID: 7}), ""}, // no QFI: a view problem, no flow
		{ev(gtpnl.EventDelete, gtpnl.QER{SEID: 3, ID: 7}), ""},
		// Replayed after a dump that already holds it: same state.
		{ev(gtpnl.EventAdd, gtpnl.QER{SEID: 1, ID: 2, QFI: 4}), "1/1 1/2"},
	}
	for i, st := range steps {
		got, err := src.Apply(st.ev)
		if err != nil || ids(got) != st.want {
			t.Fatalf("step %d: flows %q, err %v; want %q", i, ids(got), err, st.want)
		}
	}
	if src.model.Has(2) {
		t.Error("session 2 kept in the model after its last rule was deleted")
	}
	if len(reported) != 2 || len(reported[0]) != 1 || len(reported[1]) != 0 {
		t.Errorf("view problems reported %q; want the no-QFI problem once, then its resolution", reported)
	}
	if _, err := src.Apply(Event{Kind: EventChange, SEID: 9}); err == nil {
		t.Error("a change event without a rule: want an error (the engine resyncs)")
	}
}

func TestGTP5GSourceEventsMapToSessionsAndLossToResync(t *testing.T) {
	stream := newChanStream(
		streamStep{evs: []gtpnl.Event{{Op: gtpnl.EventAdd, QER: &gtpnl.QER{SEID: 5, ID: 1}}, {Op: gtpnl.EventUpdate, PDR: &gtpnl.PDR{SEID: 6, ID: 2}}}},
		streamStep{evs: []gtpnl.Event{{Op: gtpnl.EventDelete, FAR: &gtpnl.FAR{SEID: 7, ID: 1}}}},
		streamStep{err: &gtpnl.OpError{Op: "receive QoS events", Err: gtpnl.ErrResync}}, // ENOBUFS: keep going
		streamStep{evs: []gtpnl.Event{{Op: gtpnl.EventAdd, QER: &gtpnl.QER{SEID: 8, ID: 1}}}},
		streamStep{err: errors.New("gtp5g receive QoS events: attribute 11: short")}, // undecodable: end
	)
	src := &GTP5GSource{WithEvents: true, View: qerView,
		dialConn: func() (gtp5gConn, error) { return &fakeConn{stream: stream}, nil }}
	ch, err := src.Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev := range ch {
		s := fmt.Sprintf("%s %d", ev.Kind, ev.SEID)
		if ev.Kind != EventChange {
			s = fmt.Sprintf("%s resync-err=%v", ev.Kind, errors.Is(ev.Err, gtpnl.ErrResync))
		}
		got = append(got, s)
	}
	want := []string{"change 5", "change 6", "change 7", "resync resync-err=true", "change 8", "end resync-err=false"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q (channel closed after the undecodable message)", got, want)
	}
	if !stream.closed() {
		t.Fatal("subscription not closed when the event stream ended")
	}
}

func TestGTP5GSourceCancelEndsSubscription(t *testing.T) {
	stream := newChanStream()
	src := &GTP5GSource{WithEvents: true, View: qerView,
		dialConn: func() (gtp5gConn, error) { return &fakeConn{stream: stream}, nil }}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := src.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("event after cancel")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("channel not closed after cancel: a pending receive was not unblocked")
	}
}

func TestGTP5GSourceWithoutEventsPolls(t *testing.T) {
	src := &GTP5GSource{View: qerView, dialConn: func() (gtp5gConn, error) { return &fakeConn{}, nil }}
	if _, err := src.Events(context.Background()); !errors.Is(err, ErrEventsNotSupported) {
		t.Fatalf("stock source: err %v, want ErrEventsNotSupported", err)
	}
	// Patched features claimed, but the module has no event group.
	src = &GTP5GSource{WithEvents: true, View: qerView,
		dialConn: func() (gtp5gConn, error) { return &fakeConn{subErr: gtpnl.ErrNotSupported}, nil }}
	if _, err := src.Events(context.Background()); !errors.Is(err, ErrEventsNotSupported) {
		t.Fatalf("no event group: err %v, want ErrEventsNotSupported", err)
	}
}

func TestGTP5GSourceRedialsAfterFailedDump(t *testing.T) {
	gone := &fakeConn{dumpErr: &gtpnl.OpError{Op: "dump QERs", Err: os.ErrNotExist}}
	back := &fakeConn{qers: []gtpnl.QER{{SEID: 3, ID: 1, QFI: 5}, {SEID: 3, ID: 2}}}
	conns := []*fakeConn{gone, back}
	dials := 0
	var reported [][]string
	src := &GTP5GSource{View: qerView,
		OnViewProblems: func(p []string) { reported = append(reported, p) },
		dialConn: func() (gtp5gConn, error) {
			c := conns[dials]
			dials++
			return c, nil
		}}
	if _, err := src.Snapshot(context.Background()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dump with gtp5g gone: err %v", err)
	}
	if !gone.closed {
		t.Fatal("failed client not closed")
	}
	flows, err := src.Snapshot(context.Background())
	if err != nil || dials != 2 || len(flows) != 1 || flows[0].ID != (shaper.FlowID{SEID: 3, QERID: 1}) {
		t.Fatalf("after redial: flows %v err %v dials %d", flows, err, dials)
	}
	if _, err := src.Snapshot(context.Background()); err != nil || dials != 2 {
		t.Fatalf("healthy client not reused: err %v dials %d", err, dials)
	}
	if len(reported) != 1 || len(reported[0]) != 1 {
		t.Fatalf("view problems reported %q, want the one problem once (not per dump)", reported)
	}
}

// TestGTP5GSourceCheckRedialsAfterReload: Check passes while the module is
// the one dialled; when it is not (unloaded or reloaded), Check fails,
// closes the client, and the next call dials afresh.
func TestGTP5GSourceCheckRedialsAfterReload(t *testing.T) {
	first := &fakeConn{}
	dials := 0
	src := &GTP5GSource{View: qerView, dialConn: func() (gtp5gConn, error) {
		dials++
		if dials == 1 {
			return first, nil
		}
		return &fakeConn{}, nil
	}}
	if err := src.Check(context.Background()); err != nil {
		t.Fatalf("module loaded: %v", err)
	}
	first.aliveErr = errors.New("gtp5g was reloaded")
	if err := src.Check(context.Background()); err == nil {
		t.Fatal("module reloaded: Check passed")
	}
	if !first.closed {
		t.Error("the client of the old module was not closed")
	}
	if err := src.Check(context.Background()); err != nil || dials != 2 {
		t.Errorf("after a reload: err %v, %d dials; want a new client", err, dials)
	}
}

// TestEngineDropsEventsTheDumpReplaces: events queued before a loss are
// older than the dump the loss brings; replayed after it, an add whose
// delete was lost would bring back a session the dump no longer holds.
func TestEngineDropsEventsTheDumpReplaces(t *testing.T) {
	stream := newChanStream()
	conn := &fakeConn{stream: stream}
	src := &GTP5GSource{View: qerView, WithEvents: true, dialConn: func() (gtp5gConn, error) { return conn, nil }}
	gate := make(chan struct{})
	ap := &fakeBackend{dev: "n3", gate: gate}
	e := startEngine(t, Options{Source: src, Downlink: ap, Resync: time.Hour})
	gate <- struct{}{} // the start's apply
	q9 := gtpnl.QER{SEID: 9, ID: 1, QFI: 2}
	stream.steps <- streamStep{evs: []gtpnl.Event{{Op: gtpnl.EventAdd, Seq: 1, QER: &q9}}}
	eventually(t, 5*time.Second, "seid 9's Update at the gate", func() bool {
		ap.mu.Lock()
		defer ap.mu.Unlock()
		return ap.atGate == 2
	})
	// The engine now waits at the gate with seid 9's Update. Seid 1 is
	// added, its delete is lost, and the loss is reported.
	q1 := gtpnl.QER{SEID: 1, ID: 1, QFI: 2}
	stream.steps <- streamStep{evs: []gtpnl.Event{{Op: gtpnl.EventAdd, Seq: 2, QER: &q1}}}
	stream.steps <- streamStep{err: gtpnl.ErrResync}
	eventually(t, 5*time.Second, "the add and the loss queued", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.pend.changes) == 1 && e.pend.full != syncNone
	})
	conn.setQERs(q9)
	close(gate)
	eventually(t, 5*time.Second, "the dump's sessions alone (seid 9)", func() bool {
		got, _ := ap.state()
		return len(got) == 1 && got[0].ID.SEID == 9
	})
}
