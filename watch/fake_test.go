package watch

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// scriptedSource is a fake gtpnl source: a rule set (the truth) that tests
// mutate, and an event stream they script independently of it, so events
// can be duplicated, reordered or dropped.
type scriptedSource struct {
	mu        sync.Mutex
	truth     map[uint64][]shaper.Flow
	noEvents  bool  // stock gtp5g: Events is not supported
	failWith  error // Snapshot/Session/Events fail with this (gtp5g gone)
	ch        chan Event
	subs      int // Events calls that succeeded
	snapshots int
	sessions  int
}

func newScriptedSource() *scriptedSource {
	return &scriptedSource{truth: map[uint64][]shaper.Flow{}}
}

// set replaces a session's flows in the truth (none: the session is gone).
func (s *scriptedSource) set(seid uint64, flows ...shaper.Flow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(flows) == 0 {
		delete(s.truth, seid)
		return
	}
	s.truth[seid] = slices.Clone(flows)
}

// emit sends an event on the current subscription (dropped if none).
func (s *scriptedSource) emit(ev Event) {
	s.mu.Lock()
	ch := s.ch
	s.mu.Unlock()
	if ch != nil {
		ch <- ev
	}
}

// change sets the truth and emits the matching change event.
func (s *scriptedSource) change(seid uint64, flows ...shaper.Flow) {
	s.set(seid, flows...)
	s.emit(Event{Kind: EventChange, SEID: seid})
}

// drop ends the current subscription, as when gtp5g is unloaded.
func (s *scriptedSource) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

func (s *scriptedSource) setFail(err error) {
	s.mu.Lock()
	s.failWith = err
	s.mu.Unlock()
}

// all returns the truth as one flow list.
func (s *scriptedSource) all() []shaper.Flow {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []shaper.Flow
	for _, k := range slices.Sorted(maps.Keys(s.truth)) {
		out = append(out, s.truth[k]...)
	}
	return out
}

func (s *scriptedSource) Snapshot(ctx context.Context) ([]shaper.Flow, error) {
	s.mu.Lock()
	s.snapshots++
	err := s.failWith
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.all(), nil
}

func (s *scriptedSource) Session(ctx context.Context, seid uint64) ([]shaper.Flow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions++
	if s.failWith != nil {
		return nil, s.failWith
	}
	return slices.Clone(s.truth[seid]), nil
}

func (s *scriptedSource) Events(ctx context.Context) (<-chan Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failWith != nil {
		return nil, s.failWith
	}
	if s.noEvents {
		return nil, ErrEventsNotSupported
	}
	ch := make(chan Event, 1<<14)
	s.ch = ch
	s.subs++
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		if s.ch == ch {
			close(ch)
			s.ch = nil
		}
		s.mu.Unlock()
	}()
	return ch, nil
}

func (s *scriptedSource) counts() (subs, snapshots, sessions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subs, s.snapshots, s.sessions
}

// fakeApplier records what it was asked to apply.
type fakeApplier struct {
	dev   string
	mu    sync.Mutex
	last  []shaper.Flow
	calls int
	fail  error
	gate  chan struct{} // if set, Apply waits for a receive on it
}

func (a *fakeApplier) Dev() string { return a.dev }

func (a *fakeApplier) Apply(ctx context.Context, flows []shaper.Flow) (Result, error) {
	if a.gate != nil {
		select {
		case <-a.gate:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if a.fail != nil {
		return Result{}, a.fail
	}
	var ch []Change
	if !slices.Equal(a.last, flows) {
		ch = append(ch, Change{Op: "change", Object: "tree"})
	}
	a.last = slices.Clone(flows)
	return Result{Changes: ch, Flows: len(flows), Classes: len(flows) + 2}, nil
}

func (a *fakeApplier) Remove(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last = nil
	return nil
}

func (a *fakeApplier) Stats(ctx context.Context) ([]ClassStats, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []ClassStats
	for i, f := range a.last {
		out = append(out, ClassStats{Class: "1:" + string(rune('a'+i)), Flow: f.ID, QFI: f.QFI, Bytes: 100})
	}
	return out, nil
}

func (a *fakeApplier) state() ([]shaper.Flow, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.last), a.calls
}

func (a *fakeApplier) setFail(err error) {
	a.mu.Lock()
	a.fail = err
	a.mu.Unlock()
}

// recObserver records observer calls.
type recObserver struct {
	mu        sync.Mutex
	resyncs   []string
	degraded  []string
	recovered []string
	problems  int
	applied   int
}

func (o *recObserver) Applied(string, Result, time.Duration) {
	o.mu.Lock()
	o.applied++
	o.mu.Unlock()
}
func (o *recObserver) Problems(string, []Problem) {
	o.mu.Lock()
	o.problems++
	o.mu.Unlock()
}
func (o *recObserver) Resync(r string) {
	o.mu.Lock()
	o.resyncs = append(o.resyncs, r)
	o.mu.Unlock()
}
func (o *recObserver) Degraded(stage string, err error) {
	o.mu.Lock()
	o.degraded = append(o.degraded, stage)
	o.mu.Unlock()
}
func (o *recObserver) Recovered(stage string) {
	o.mu.Lock()
	o.recovered = append(o.recovered, stage)
	o.mu.Unlock()
}

func (o *recObserver) snapshot() recObserver {
	o.mu.Lock()
	defer o.mu.Unlock()
	return recObserver{resyncs: slices.Clone(o.resyncs), degraded: slices.Clone(o.degraded),
		recovered: slices.Clone(o.recovered), problems: o.problems, applied: o.applied}
}

// flow builds a downlink flow of session seid.
func flow(seid uint64, qer uint32, qfi uint8, gbr, mbr uint64) shaper.Flow {
	return shaper.Flow{
		ID:        shaper.FlowID{SEID: seid, QERID: qer},
		QFI:       qfi,
		Direction: shaper.Downlink,
		GBR:       gbr,
		MBR:       mbr,
		Mark:      uint32(seid)<<8 | uint32(qfi),
	}
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startEngine runs an engine until the test ends.
func startEngine(t testing.TB, opt Options) *Engine {
	t.Helper()
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil on a graceful stop", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
	})
	return e
}

var errGone = errors.New("gtp5g module not loaded")
