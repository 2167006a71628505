package watch

import (
	"context"
	"errors"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

func downlinkOf(flows []shaper.Flow) []shaper.Flow {
	var out []shaper.Flow
	for _, f := range flows {
		if f.Direction == shaper.Downlink {
			out = append(out, f)
		}
	}
	return out
}

func converged(src *scriptedSource, ap *fakeBackend) func() bool {
	return func() bool {
		got, _ := ap.state()
		return slices.Equal(got, downlinkOf(src.all())) && got != nil
	}
}

func TestEngineAppliesStartSnapshotAndSplitsDirections(t *testing.T) {
	src := newScriptedSource()
	up := flow(2, 1, 9, 0, 2e6)
	up.Direction = shaper.Uplink
	src.set(1, flow(1, 1, 2, 15e6, 18e6), flow(1, 2, 3, 5e6, 6e6))
	src.set(2, up)
	dl, ul := &fakeBackend{dev: "n3"}, &fakeBackend{dev: "n6"}
	startEngine(t, Options{Source: src, Downlink: dl, Uplink: ul, Resync: time.Hour})
	eventually(t, 5*time.Second, "both trees applied", func() bool {
		d, _ := dl.state()
		u, _ := ul.state()
		return len(d) == 2 && len(u) == 1
	})
	d, _ := dl.state()
	u, _ := ul.state()
	if d[0].ID.QERID != 1 || d[1].ID.QERID != 2 || u[0] != up {
		t.Fatalf("downlink %v uplink %v: flows not split by direction in order", d, u)
	}
	dl.mu.Lock()
	defer dl.mu.Unlock()
	if !dl.applyOpt.NoClassList || dl.applyOpt.Strict {
		t.Errorf("full apply options %+v: the engine reads no class list and is not strict", dl.applyOpt)
	}
}

func TestEngineStormDuplicatesAndReorderConverge(t *testing.T) {
	src := newScriptedSource()
	ap := &fakeBackend{dev: "n3"}
	startEngine(t, Options{Source: src, Downlink: ap, Resync: time.Hour})
	eventually(t, 5*time.Second, "start", func() bool { _, c := ap.state(); return c >= 1 })
	for i := range 300 {
		seid := uint64(i%40 + 1)
		switch i % 3 {
		case 0, 1:
			src.change(seid, flow(seid, 1, 1, uint64(i%5)*1e6, 20e6), flow(seid, 2, 2, 0, 10e6))
		case 2:
			src.change(seid)
		}
		if i%7 == 0 { // duplicate
			src.emit(Event{Kind: EventChange, SEID: seid})
		}
	}
	// Out of order: the delete's event arrives after an add's, for a
	// session whose final state is present; and an event for a session
	// that never existed.
	src.set(99, flow(99, 1, 5, 1e6, 2e6))
	src.emit(Event{Kind: EventChange, SEID: 77})
	src.emit(Event{Kind: EventChange, SEID: 99})
	src.emit(Event{Kind: EventChange, SEID: 99})
	eventually(t, 5*time.Second, "convergence to the final rule set", converged(src, ap))
}

func TestEngineCoalescesBurst(t *testing.T) {
	src := newScriptedSource()
	ap := &fakeBackend{dev: "n3", gate: make(chan struct{})}
	m := NewMetrics()
	startEngine(t, Options{Source: src, Downlink: ap, Resync: time.Hour, Metrics: m})
	ap.gate <- struct{}{} // let the start-up apply through
	eventually(t, 5*time.Second, "start", func() bool { _, c := ap.state(); return c == 1 })
	// A session with several QERs arrives as 50 events while the engine is
	// busy in a reconcile (blocked at the gate): they must become one
	// reconcile.
	for q := uint32(1); q <= 50; q++ {
		flows := []shaper.Flow{}
		for k := uint32(1); k <= q; k++ {
			flows = append(flows, flow(7, k, uint8(k), 0, 1e6))
		}
		src.change(7, flows...)
	}
	eventually(t, 5*time.Second, "all events received", func() bool {
		return counterValue(t, m, "gtpqos_events_total", "change") == 50
	})
	go func() {
		for range 5 {
			select {
			case ap.gate <- struct{}{}:
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	eventually(t, 5*time.Second, "convergence", converged(src, ap))
	time.Sleep(400 * time.Millisecond)
	// 1 start-up + the reconcile that was blocked (it read the first
	// event's state) + 1 for the other 49 events.
	if _, calls := ap.state(); calls > 3 {
		t.Fatalf("%d applies for one start-up and a 50-event burst, want <= 3 (bursts must coalesce)", calls)
	}
}

func TestEngineLostEventsTriggerFullResync(t *testing.T) {
	src := newScriptedSource()
	ap := &fakeBackend{dev: "n3"}
	obs := &recObserver{}
	m := NewMetrics()
	startEngine(t, Options{Source: src, Downlink: ap, Resync: time.Hour, Observer: obs, Metrics: m})
	eventually(t, 5*time.Second, "start", func() bool { _, c := ap.state(); return c >= 1 })
	src.change(1, flow(1, 1, 1, 1e6, 2e6))
	// Events lost in the kernel: the truth changes without events...
	src.set(2, flow(2, 1, 1, 1e6, 2e6))
	src.set(1)
	// ...and the source says so (ENOBUFS).
	src.emit(Event{Kind: EventResync, Err: errors.New("ENOBUFS")})
	eventually(t, 5*time.Second, "convergence after ENOBUFS", converged(src, ap))
	o := obs.snapshot()
	if !slices.ContainsFunc(o.resyncs, func(r string) bool { return strings.Contains(r, "ENOBUFS") }) {
		t.Fatalf("resyncs %q: no resync naming the lost events", o.resyncs)
	}
	if got := counterValue(t, m, "gtpqos_resyncs_total", "lost-events"); got != 1 {
		t.Fatalf("gtpqos_resyncs_total{reason=lost-events} = %v, want 1", got)
	}
	// The start and the resync for the lost events both made the backend
	// read its device back (drift repair), instead of trusting its last
	// write.
	if resyncs, _ := ap.counts(); resyncs != 2 {
		t.Fatalf("Backend.Resync called %d times, want 2 (start, lost events)", resyncs)
	}
}

// TestEngineSubscriptionEndCostsOneDump: a subscription that ends (a
// broken socket, a message that does not decode) is reported once with its
// reason, and costs one dump, after the new subscription: not a second one
// for the events it may have lost.
func TestEngineSubscriptionEndCostsOneDump(t *testing.T) {
	src := newScriptedSource()
	ap := &fakeBackend{dev: "n3"}
	obs := &recObserver{}
	startEngine(t, Options{Source: src, Downlink: ap, Resync: time.Hour, Retry: 20 * time.Millisecond, Observer: obs})
	eventually(t, 5*time.Second, "start", func() bool { _, c := ap.state(); return c >= 1 })
	src.set(2, flow(2, 1, 1, 1e6, 2e6)) // changed while events are lost
	src.emit(Event{Kind: EventEnd, Err: errors.New("attribute 11: short")})
	src.drop()
	eventually(t, 5*time.Second, "resubscribed and converged", func() bool {
		subs, _, _ := src.counts()
		return subs == 2 && converged(src, ap)()
	})
	time.Sleep(100 * time.Millisecond) // room for a second dump, were one coming
	if _, snapshots, _ := src.counts(); snapshots != 2 {
		t.Errorf("%d dumps, want 2: the start's and the new subscription's", snapshots)
	}
	o := obs.snapshot()
	if len(o.degraded) != 1 || o.degraded[0] != "events" || !strings.Contains(o.whys[0], "attribute 11: short") {
		t.Errorf("degraded %q (%q), want the subscription's end once, with its reason", o.degraded, o.whys)
	}
	if !slices.Contains(o.recovered, "events") {
		t.Errorf("recovered %q, want events", o.recovered)
	}
}

func TestEnginePollsWithoutEvents(t *testing.T) {
	src := newScriptedSource()
	src.noEvents = true
	ap := &fakeBackend{dev: "n3"}
	obs := &recObserver{}
	e := startEngine(t, Options{Source: src, Downlink: ap, Poll: 20 * time.Millisecond, Resync: time.Hour, Observer: obs})
	src.set(3, flow(3, 1, 1, 1e6, 2e6))
	eventually(t, 5*time.Second, "poll picks up the change", converged(src, ap))
	if !e.Polling() {
		t.Fatal("Polling() = false with a source without events")
	}
	time.Sleep(100 * time.Millisecond)
	if _, snaps, _ := src.counts(); snaps < 3 {
		t.Fatalf("%d snapshots, want several polls", snaps)
	}
	if o := obs.snapshot(); len(o.resyncs) != 1 || o.resyncs[0] != "start" {
		t.Fatalf("resyncs reported %q, want only [start]: polls must be silent", o.resyncs)
	}
	// Polls trust the backend's last write: only the start read it back.
	if resyncs, _ := ap.counts(); resyncs != 1 {
		t.Fatalf("Backend.Resync called %d times over several polls, want once (start)", resyncs)
	}
	// gtp5g unloaded for several polls: one outage report, no per-poll
	// retry reports, and the change made meanwhile is picked up after.
	src.setFail(errGone)
	time.Sleep(150 * time.Millisecond)
	src.set(4, flow(4, 1, 1, 1e6, 2e6))
	src.setFail(nil)
	eventually(t, 5*time.Second, "poll after the outage", converged(src, ap))
	o := obs.snapshot()
	if len(o.resyncs) != 1 || len(o.degraded) != 1 || o.degraded[0] != "source" {
		t.Fatalf("resyncs %q degraded %q: want one 'source' outage report and no per-poll resync reports", o.resyncs, o.degraded)
	}
}

func TestEngineWaitsForSourceToComeBack(t *testing.T) {
	src := newScriptedSource()
	src.setFail(errGone)
	ap := &fakeBackend{dev: "n3"}
	obs := &recObserver{}
	startEngine(t, Options{Source: src, Downlink: ap, Retry: 20 * time.Millisecond, Resync: time.Hour, Observer: obs})
	time.Sleep(150 * time.Millisecond)
	src.set(4, flow(4, 1, 1, 1e6, 2e6))
	src.setFail(nil) // gtp5g loaded again
	eventually(t, 5*time.Second, "rebuild after the source came back", converged(src, ap))
	o := obs.snapshot()
	if n := strings.Count(strings.Join(o.degraded, ","), "events"); n != 1 {
		t.Fatalf("degraded %q: want exactly one 'events' report for one outage (no per-retry noise)", o.degraded)
	}
	if !slices.Contains(o.recovered, "events") {
		t.Fatalf("recovered %q: no recovery reported", o.recovered)
	}
	if slices.Contains(o.resyncs, "retry") {
		t.Fatalf("resyncs %q: retries during an outage must not be reported one by one", o.resyncs)
	}
	// gtp5g unloaded while running: the subscription ends; the engine
	// waits, subscribes again and dumps.
	src.setFail(errGone)
	src.drop()
	time.Sleep(100 * time.Millisecond)
	src.set(5, flow(5, 1, 1, 1e6, 2e6))
	src.setFail(nil)
	eventually(t, 5*time.Second, "rebuild after reload", converged(src, ap))
	if subs, _, _ := src.counts(); subs < 2 {
		t.Fatalf("%d subscriptions, want a new one after the reload", subs)
	}
}

func TestEngineRetriesFailingDevice(t *testing.T) {
	src := newScriptedSource()
	src.set(1, flow(1, 1, 1, 1e6, 2e6))
	ap := &fakeBackend{dev: "n3", fail: errors.New("link n3 not found")}
	obs := &recObserver{}
	startEngine(t, Options{Source: src, Downlink: ap, Retry: 20 * time.Millisecond, Resync: time.Hour, Observer: obs})
	eventually(t, 5*time.Second, "several attempts", func() bool { _, c := ap.state(); return c >= 3 })
	ap.setFail(nil) // the interface is back
	eventually(t, 5*time.Second, "rebuild on the device", converged(src, ap))
	o := obs.snapshot()
	if len(o.degraded) != 1 || o.degraded[0] != "n3" || !slices.Contains(o.recovered, "n3") {
		t.Fatalf("degraded %q recovered %q: want one n3 outage and its recovery", o.degraded, o.recovered)
	}
}

func TestEngineUsesSessionReadsForEvents(t *testing.T) {
	src := newScriptedSource()
	ap := &fakeBackend{dev: "n3"}
	startEngine(t, Options{Source: src, Downlink: ap, Resync: time.Hour})
	eventually(t, 5*time.Second, "start", func() bool { _, c := ap.state(); return c >= 1 })
	_, snaps0, _ := src.counts()
	for i := range uint64(10) {
		src.change(i+1, flow(i+1, 1, 1, 0, 1e6))
	}
	eventually(t, 5*time.Second, "convergence", converged(src, ap))
	_, snaps, sessions := src.counts()
	if snaps != snaps0 || sessions == 0 {
		t.Fatalf("snapshots %d -> %d, session reads %d: events should read only their sessions", snaps0, snaps, sessions)
	}
}

func TestNewRejectsMissingParts(t *testing.T) {
	if _, err := New(Options{Downlink: &fakeBackend{}}); err == nil {
		t.Error("New without a source succeeded")
	}
	if _, err := New(Options{Source: newScriptedSource()}); err == nil {
		t.Error("New without a device succeeded")
	}
}

// TestChangeAndProblemStrings checks the lines an Observer logs for a
// backend's changes and the planner's problems.
func TestChangeAndProblemStrings(t *testing.T) {
	c := shaper.Change{Op: "add", Object: "class", Class: "1:10", Role: shaper.RoleFlow,
		Flow: shaper.FlowID{SEID: 5, QERID: 2}, QFI: 9, Detail: "rate 1Mbit"}
	if got, want := c.String(), "add class 1:10 seid=5 qer=2 qfi=9: rate 1Mbit"; got != want {
		t.Errorf("Change.String() = %q, want %q", got, want)
	}
	s := shaper.Change{Op: "delete", Object: "class", Class: "1:11", Role: shaper.RoleSession, Flow: shaper.FlowID{SEID: 5}, Detail: "session"}
	if got, want := s.String(), "delete class 1:11 seid=5: session"; got != want {
		t.Errorf("session Change.String() = %q, want %q", got, want)
	}
	p := shaper.Problem{Kind: shaper.MBRBelowGBR, Severity: shaper.Error, Flow: shaper.FlowID{SEID: 5, QERID: 2},
		Name: "flow seid=5 qer=2", Field: "mbr", Detail: "MBR below GBR"}
	if got, want := p.String(), "error: flow seid=5 qer=2: mbr: MBR below GBR"; got != want {
		t.Errorf("Problem.String() = %q, want %q", got, want)
	}
}

// TestEngineSetPoliciesReachNextApply: each device plans with its own
// policy, and a policy set while running (SIGHUP) reaches the next Apply
// of each device, with a full resync when asked.
func TestEngineSetPoliciesReachNextApply(t *testing.T) {
	src := newScriptedSource()
	up := flow(2, 1, 9, 0, 2e6)
	up.Direction = shaper.Uplink
	src.set(1, flow(1, 1, 2, 15e6, 18e6))
	src.set(2, up)
	dl, ul := &fakeBackend{dev: "n3"}, &fakeBackend{dev: "n6"}
	dlPol, ulPol := shaper.DefaultPolicy(30e6), shaper.DefaultPolicy(10e6)
	obs := &recObserver{}
	m := NewMetrics()
	e := startEngine(t, Options{Source: src, Downlink: dl, DownlinkPolicy: dlPol, Uplink: ul, UplinkPolicy: ulPol,
		Resync: time.Hour, Observer: obs, Metrics: m})
	eventually(t, 5*time.Second, "start", func() bool { _, d := dl.state(); _, u := ul.state(); return d >= 1 && u >= 1 })
	if dl.policy() != dlPol || ul.policy() != ulPol {
		t.Fatalf("start: downlink planned with %+v, uplink with %+v; want each device's own policy", dl.policy(), ul.policy())
	}
	if got, ok := e.Policy(shaper.Uplink); !ok || got != ulPol {
		t.Fatalf("Policy(uplink) = %+v, %v", got, ok)
	}

	// A reload: new link rates and a knob changed.
	dl2, ul2 := shaper.DefaultPolicy(50e6), shaper.DefaultPolicy(20e6)
	dl2.NonGBRMin, dl2.DefaultRate = 2e6, 2e6
	ul2.Mode = shaper.Static
	e.SetPolicies(dl2, ul2)
	if got, _ := e.Policy(shaper.Downlink); got != dl2 {
		t.Fatalf("Policy(downlink) after SetPolicies = %+v, want %+v", got, dl2)
	}
	resyncs0, _ := dl.counts()
	e.RequestResync()
	eventually(t, 5*time.Second, "the new policies applied", func() bool { return dl.policy() == dl2 && ul.policy() == ul2 })
	if resyncs, _ := dl.counts(); resyncs != resyncs0+1 {
		t.Errorf("reload resync: Backend.Resync called %d times, want once", resyncs-resyncs0)
	}
	if o := obs.snapshot(); !slices.Contains(o.resyncs, "reload") {
		t.Errorf("resyncs %q: the reload was not reported", o.resyncs)
	}
	if got := counterValue(t, m, "gtpqos_resyncs_total", "reload"); got != 1 {
		t.Errorf("gtpqos_resyncs_total{reason=reload} = %v, want 1", got)
	}

	// Without an explicit resync, the next event-driven reconcile uses it.
	dl3 := dl2
	dl3.Admission = shaper.Clamp
	e.SetPolicies(dl3, ul2)
	src.change(1, flow(1, 1, 2, 15e6, 20e6))
	eventually(t, 5*time.Second, "the next reconcile uses the new policy", func() bool { return dl.policy() == dl3 })
	if got, _ := dl.state(); len(got) != 1 || got[0].MBR != 20e6 {
		t.Fatalf("downlink flows %v after the event", got)
	}
}

func TestEngineCleanupResetsEveryDevice(t *testing.T) {
	src := newScriptedSource()
	src.set(1, flow(1, 1, 2, 15e6, 18e6))
	dl, ul := &fakeBackend{dev: "n3"}, &fakeBackend{dev: "n6"}
	e, err := New(Options{Source: src, Downlink: dl, Uplink: ul})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, resets := dl.counts(); resets != 1 {
		t.Errorf("downlink reset %d times, want 1", resets)
	}
	if _, resets := ul.counts(); resets != 1 {
		t.Errorf("uplink reset %d times, want 1", resets)
	}
	e, err = New(Options{Source: src, Downlink: dl})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Policy(shaper.Uplink); ok {
		t.Errorf("Policy(uplink) of an engine without an uplink device: ok")
	}
}

// TestEngineSendsOnlyChangedSessions checks that after the start-up's full
// apply, an event and a poll that finds one changed session reach the
// backend as an Update of that session alone, and a poll that finds
// nothing changed reaches it not at all.
func TestEngineSendsOnlyChangedSessions(t *testing.T) {
	src := newScriptedSource()
	src.noEvents = true
	for s := uint64(1); s <= 20; s++ {
		src.set(s, flow(s, 1, 1, 0, 1e6))
	}
	ap := &fakeBackend{dev: "n3"}
	startEngine(t, Options{Source: src, Downlink: ap, Poll: 20 * time.Millisecond, Resync: time.Hour})
	eventually(t, 5*time.Second, "start", converged(src, ap))
	_, calls := ap.state()
	time.Sleep(150 * time.Millisecond) // several polls, nothing changed
	if _, c := ap.state(); c != calls {
		t.Fatalf("%d backend calls for polls that found nothing new, want 0", c-calls)
	}
	src.set(7, flow(7, 1, 1, 0, 2e6))
	eventually(t, 5*time.Second, "poll picks up the change", converged(src, ap))
	ap.mu.Lock()
	updates := ap.updates
	ap.mu.Unlock()
	if updates != 1 {
		t.Fatalf("%d updates for one changed session, want 1 (and no full apply)", updates)
	}
}

// TestEngineFallsBackToFullApply checks that an Update the backend cannot
// do (no state) becomes a full Apply.
func TestEngineFallsBackToFullApply(t *testing.T) {
	src := newScriptedSource()
	src.set(1, flow(1, 1, 1, 0, 1e6))
	ap := &fakeBackend{dev: "n3"}
	startEngine(t, Options{Source: src, Downlink: ap, Resync: time.Hour})
	eventually(t, 5*time.Second, "start", converged(src, ap))
	ap.mu.Lock()
	ap.sessions = nil // the backend lost its state (as after a failure)
	ap.mu.Unlock()
	src.change(2, flow(2, 1, 1, 0, 1e6))
	eventually(t, 5*time.Second, "full apply after the refused update", converged(src, ap))
}

// checkedSource is a scripted source that can also say whether it still
// reads what it dialled (as GTP5GSource does).
type checkedSource struct {
	*scriptedSource
	mu       sync.Mutex
	checkErr error
	checks   int
}

func (c *checkedSource) Check(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks++
	return c.checkErr
}

func (c *checkedSource) setCheckErr(err error) {
	c.mu.Lock()
	c.checkErr = err
	c.mu.Unlock()
}

func (c *checkedSource) counts() (checks, dumps int) {
	c.mu.Lock()
	checks = c.checks
	c.mu.Unlock()
	c.scriptedSource.mu.Lock()
	defer c.scriptedSource.mu.Unlock()
	return checks, c.snapshots
}

// TestEnginePeriodicResyncChecksTheSource: the periodic resync gives the
// device every flow without dumping the source, but asks a Checker source
// whether it still reads what it dialled; when it does not (gtp5g unloaded
// or reloaded), the source is reported degraded and the engine resyncs
// with a dump once it answers again.
func TestEnginePeriodicResyncChecksTheSource(t *testing.T) {
	src := &checkedSource{scriptedSource: newScriptedSource()}
	src.set(1, flow(1, 1, 1, 1e6, 2e6))
	ap := &fakeBackend{dev: "n3"}
	obs := &recObserver{}
	startEngine(t, Options{Source: src, Downlink: ap, Observer: obs, Resync: 100 * time.Millisecond, Retry: 50 * time.Millisecond})
	eventually(t, 5*time.Second, "periodic resyncs", func() bool {
		checks, _ := src.counts()
		return checks >= 3
	})
	if _, dumps := src.counts(); dumps != 1 {
		t.Fatalf("%d dumps with the source alive, want the start's alone", dumps)
	}
	if _, calls := ap.state(); calls < 3 {
		t.Errorf("%d applies after three periodic resyncs, want every one to apply", calls)
	}

	src.setCheckErr(errors.New("gtp5g was reloaded"))
	eventually(t, 5*time.Second, "the source reported degraded", func() bool {
		return slices.Contains(obs.snapshot().degraded, "source")
	})
	src.setCheckErr(nil)
	eventually(t, 5*time.Second, "a resync with a dump, and recovery", func() bool {
		_, dumps := src.counts()
		return dumps >= 2 && slices.Contains(obs.snapshot().recovered, "source")
	})
}

// TestEngineReleasesMemoryAfterFullApplies: with ReleaseMemory, every full
// apply (the start, each periodic resync) ends in a forced collection that
// returns free pages to the OS; without it the engine forces none.
func TestEngineReleasesMemoryAfterFullApplies(t *testing.T) {
	for _, release := range []bool{false, true} {
		src := newScriptedSource()
		src.set(1, flow(1, 1, 1, 1e6, 2e6))
		ap := &fakeBackend{dev: "n3"}
		before := forcedGCs(t)
		ctx, cancel := context.WithCancel(context.Background())
		eng, err := New(Options{Source: src, Downlink: ap, Resync: 50 * time.Millisecond, ReleaseMemory: release})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- eng.Run(ctx) }()
		eventually(t, 5*time.Second, "three full applies", func() bool {
			_, calls := ap.state()
			return calls >= 3
		})
		cancel()
		<-done
		_, calls := ap.state()
		forced := forcedGCs(t) - before
		switch {
		case release && (forced < 3 || forced > uint64(calls)):
			t.Errorf("ReleaseMemory: %d forced collections for %d full applies, want one each", forced, calls)
		case !release && forced != 0:
			t.Errorf("without ReleaseMemory: %d forced collections, want none", forced)
		}
	}
}

func forcedGCs(t *testing.T) uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatal("the runtime has no forced-collection count")
	}
	return s[0].Value.Uint64()
}
