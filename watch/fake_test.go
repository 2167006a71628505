package watch

import (
	"context"
	"errors"
	"fmt"
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
	failWith  error // Snapshot/Apply/Events fail with this (gtp5g gone)
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

// Apply returns the session's flows in the truth: the fake keeps no model
// of its own, it is the model.
func (s *scriptedSource) Apply(ev Event) ([]shaper.Flow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions++
	if s.failWith != nil {
		return nil, s.failWith
	}
	return slices.Clone(s.truth[ev.SEID]), nil
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

// fakeBackend is a shaper.Backend that records what it was asked to
// enforce: the flows and the policy of each Apply, and the Resyncs and
// Resets the engine asks for. Its report lists a link class, a default
// class and one flow class per flow, with a change whenever the flows
// changed; its counters say every class sent 100 bytes.
type fakeBackend struct {
	dev         string
	mu          sync.Mutex
	last        []shaper.Flow
	sessions    map[uint64][]shaper.Flow // last, by session (nil: no Apply yet)
	updates     int                      // successful Updates
	pol         shaper.Policy            // the last Apply's policy
	applyOpt    shaper.ApplyOptions      // the last Apply's options
	classes     []shaper.ClassState
	calls       int
	resyncs     int
	resets      int
	fail        error
	countersErr error
	gate        chan struct{} // if set, Apply and Update wait for a receive on it
	atGate      int           // calls that reached the gate
}

var _ shaper.Backend = (*fakeBackend)(nil)

func (a *fakeBackend) Name() string { return "fake" }
func (a *fakeBackend) Dev() string  { return a.dev }

// wait holds a call at the gate, if the test set one.
func (a *fakeBackend) wait(ctx context.Context) error {
	if a.gate == nil {
		return nil
	}
	a.mu.Lock()
	a.atGate++
	a.mu.Unlock()
	select {
	case <-a.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *fakeBackend) Apply(ctx context.Context, flows []shaper.Flow, pol shaper.Policy, opt shaper.ApplyOptions) (shaper.Report, error) {
	if err := a.wait(ctx); err != nil {
		return shaper.Report{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	a.applyOpt = opt
	rep := shaper.Report{Dev: a.dev, Backend: a.Name(), Flows: len(flows)}
	if a.fail != nil {
		return rep, a.fail
	}
	if !slices.Equal(a.last, flows) {
		rep.Changes = append(rep.Changes, shaper.Change{Op: "change", Object: "tree"})
	}
	rep.Writes = len(rep.Changes)
	a.set(flows, pol)
	rep.Classes, rep.ClassCount = slices.Clone(a.classes), len(a.classes)
	return rep, nil
}

// set records flows (in FlowID order, as the engine sends them) as what the
// device holds.
func (a *fakeBackend) set(flows []shaper.Flow, pol shaper.Policy) {
	a.last, a.pol = slices.Clone(flows), pol
	a.sessions = map[uint64][]shaper.Flow{}
	for _, f := range flows {
		a.sessions[f.ID.SEID] = append(a.sessions[f.ID.SEID], f)
	}
	a.classes = []shaper.ClassState{{Handle: "1:1", Role: shaper.RoleLink}, {Handle: "1:2", Parent: "1:1", Role: shaper.RoleDefault}}
	for i, f := range flows {
		a.classes = append(a.classes, shaper.ClassState{Handle: fmt.Sprintf("1:%x", 0x10+i), Parent: "1:1", Role: shaper.RoleFlow,
			Flow: f.ID, Key: shaper.Key{Mark: f.Mark, TEID: f.TEID, QFI: f.QFI}, Rate: f.GBR, Ceil: f.MBR})
	}
}

// Update replaces the sessions' flows in what the last Apply recorded.
func (a *fakeBackend) Update(ctx context.Context, sessions map[uint64][]shaper.Flow, pol shaper.Policy) (shaper.Report, error) {
	if err := a.wait(ctx); err != nil {
		return shaper.Report{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	rep := shaper.Report{Dev: a.dev, Backend: a.Name()}
	if a.fail != nil {
		return rep, a.fail
	}
	if a.sessions == nil {
		return rep, shaper.ErrFullApplyNeeded
	}
	next := maps.Clone(a.sessions)
	for seid, fl := range sessions {
		if len(fl) == 0 {
			delete(next, seid)
		} else {
			next[seid] = fl
		}
	}
	var flows []shaper.Flow
	for _, seid := range slices.Sorted(maps.Keys(next)) {
		flows = append(flows, next[seid]...)
	}
	if !slices.Equal(a.last, flows) {
		rep.Changes = append(rep.Changes, shaper.Change{Op: "change", Object: "tree"})
	}
	rep.Writes, rep.Flows = len(rep.Changes), len(flows)
	a.set(flows, pol)
	a.updates++
	rep.ClassCount = len(a.classes)
	return rep, nil
}

// Classes returns the classes of the last Apply or Update.
func (a *fakeBackend) Classes() []shaper.ClassState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.classes)
}

func (a *fakeBackend) Inspect(ctx context.Context) (*shaper.Inspection, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return &shaper.Inspection{Dev: a.dev, Backend: a.Name(), Owned: a.classes != nil, Classes: slices.Clone(a.classes)}, nil
}

func (a *fakeBackend) Counters(ctx context.Context) (map[string]shaper.Counters, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.countersErr != nil {
		return nil, a.countersErr
	}
	out := map[string]shaper.Counters{}
	for _, c := range a.classes {
		out[c.Handle] = shaper.Counters{Bytes: 100, Packets: 1}
	}
	return out, nil
}

func (a *fakeBackend) FlowCounters(ctx context.Context) ([]shaper.FlowCounters, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.countersErr != nil {
		return nil, a.countersErr
	}
	var out []shaper.FlowCounters
	for _, c := range a.classes {
		if c.Role != shaper.RoleFlow {
			continue
		}
		var maj, min uint32
		if _, err := fmt.Sscanf(c.Handle, "%x:%x", &maj, &min); err != nil {
			return nil, fmt.Errorf("class handle %q: %v", c.Handle, err)
		}
		out = append(out, shaper.FlowCounters{Flow: c.Flow, Class: maj<<16 | min, QFI: c.Key.QFI, Counters: shaper.Counters{Bytes: 100, Packets: 1}})
	}
	return out, nil
}

func (a *fakeBackend) Reset(ctx context.Context) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.resets++
	a.last, a.classes, a.sessions = nil, nil, nil
	return []string{"dev " + a.dev + ": removed"}, nil
}

func (a *fakeBackend) Resync() {
	a.mu.Lock()
	a.resyncs++
	a.mu.Unlock()
}

func (a *fakeBackend) Close() error { return nil }

func (a *fakeBackend) state() ([]shaper.Flow, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.last), a.calls
}

// policy returns the policy of the last successful Apply.
func (a *fakeBackend) policy() shaper.Policy {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pol
}

// counts returns how many Resyncs and Resets the backend was asked for.
func (a *fakeBackend) counts() (resyncs, resets int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.resyncs, a.resets
}

func (a *fakeBackend) setFail(err error) {
	a.mu.Lock()
	a.fail = err
	a.mu.Unlock()
}

// recObserver records observer calls, and each device's last report.
type recObserver struct {
	mu        sync.Mutex
	resyncs   []string
	degraded  []string
	whys      []string // each degradation's error
	recovered []string
	notes     []string
	problems  int
	applied   int
	reports   map[string]shaper.Report
}

func (o *recObserver) Applied(dev string, rep shaper.Report, _ time.Duration) {
	o.mu.Lock()
	o.applied++
	if o.reports == nil {
		o.reports = map[string]shaper.Report{}
	}
	o.reports[dev] = rep
	o.mu.Unlock()
}
func (o *recObserver) Problems(string, []shaper.Problem) {
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
	o.whys = append(o.whys, fmt.Sprint(err))
	o.mu.Unlock()
}
func (o *recObserver) Recovered(stage string) {
	o.mu.Lock()
	o.recovered = append(o.recovered, stage)
	o.mu.Unlock()
}
func (o *recObserver) Note(msg string) {
	o.mu.Lock()
	o.notes = append(o.notes, msg)
	o.mu.Unlock()
}
func (o *recObserver) ViewProblems([]string) {}

func (o *recObserver) snapshot() recObserver {
	o.mu.Lock()
	defer o.mu.Unlock()
	return recObserver{resyncs: slices.Clone(o.resyncs), degraded: slices.Clone(o.degraded), whys: slices.Clone(o.whys),
		recovered: slices.Clone(o.recovered), notes: slices.Clone(o.notes), problems: o.problems, applied: o.applied,
		reports: maps.Clone(o.reports)}
}

// report returns dev's last successful report.
func (o *recObserver) report(dev string) (shaper.Report, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	rep, ok := o.reports[dev]
	return rep, ok
}

// waitReport waits until dev's last report satisfies cond and returns it.
// The report is handed over after Apply returned, so what that Apply did
// (its kernel writes, its reconciler's counts) happened before.
func (o *recObserver) waitReport(t testing.TB, dev string, timeout time.Duration, what string, cond func(shaper.Report) bool) shaper.Report {
	t.Helper()
	var rep shaper.Report
	eventually(t, timeout, what, func() bool {
		r, ok := o.report(dev)
		rep = r
		return ok && cond(r)
	})
	return rep
}

// flowClasses returns a report's flow classes.
func flowClasses(rep shaper.Report) []shaper.ClassState {
	var out []shaper.ClassState
	for _, c := range rep.Classes {
		if c.Role == shaper.RoleFlow {
			out = append(out, c)
		}
	}
	return out
}

// hasFlows reports whether rep's flow classes are exactly flows'.
func hasFlows(rep shaper.Report, flows []shaper.Flow) bool {
	if len(flowClasses(rep)) != len(flows) {
		return false
	}
	for _, f := range flows {
		if _, ok := rep.FlowClass(f.ID); !ok {
			return false
		}
	}
	return true
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
