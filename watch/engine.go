package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// Defaults for Options.
const (
	DefaultPoll   = 2 * time.Second
	DefaultResync = 60 * time.Second
	DefaultRetry  = 2 * time.Second
	// maxQueuedEvents bounds the change events waiting for the engine;
	// beyond it they are dropped for one full resync.
	maxQueuedEvents = 1 << 16
)

// Options configure an Engine.
type Options struct {
	// Source yields the flows and, if it can, change events. Required.
	Source Source
	// Downlink enforces the downlink flows (N3 egress); nil for none.
	Downlink shaper.Backend
	// DownlinkPolicy is the policy downlink plans follow.
	DownlinkPolicy shaper.Policy
	// Uplink enforces the uplink flows (N6 egress); nil for none.
	Uplink shaper.Backend
	// UplinkPolicy is the policy uplink plans follow.
	UplinkPolicy shaper.Policy
	// Poll is the snapshot interval when the source has no events
	// (default DefaultPoll).
	Poll time.Duration
	// Resync is the full-resync interval that repairs drift, also in event
	// mode (default DefaultResync).
	Resync time.Duration
	// Retry is the wait before trying again after a failure: source gone
	// (gtp5g unloaded), device gone, subscription lost (default
	// DefaultRetry); failures in a row double it, up to maxBackoff.
	Retry time.Duration
	// Observer receives what the engine does (nil: discarded).
	Observer Observer
	// Metrics, if set, is updated as the engine works.
	Metrics *Metrics
	// ReleaseMemory returns the heap's free pages to the OS after every
	// successful full apply (the start, a resync), as the daemon does:
	// each makes a transient of tens of megabytes at 65k flows that the
	// resident set would otherwise keep for minutes. With TuneGC in force
	// it also fits the collector's target to the heap then live, after
	// every successful apply.
	ReleaseMemory bool
}

// device is one backend with the direction of the flows it shapes.
type device struct {
	dir      shaper.Direction
	be       shaper.Backend
	problems string // last reported problem set, to report changes only
	// needFull says the next reconcile must apply every flow (start, a
	// resync with a reason, a failure); otherwise only changed sessions
	// go to the backend.
	needFull bool

	// mu guards pol (replaced by SetPolicies while the engine runs).
	mu  sync.Mutex
	pol shaper.Policy
}

// pending is the work the event pump has queued for the engine.
type pending struct {
	// changes are the change events, in arrival order.
	changes []Event
	full    bool
	reason  string // why a full resync is due ("" = silent poll)
	// repair asks for every device to be read back and applied in full
	// from the engine's flows, without a dump (the periodic resync while
	// events flow); repairWhy says why.
	repair    bool
	repairWhy string
	lost      bool  // the event subscription ended
	endErr    error // why, when the source said
}

// Engine keeps the devices' trees in step with the Source. Create it with
// New and run it with Run.
type Engine struct {
	opt  Options
	obs  Observer
	devs []*device

	trigger chan struct{} // size 1: coalesces bursts

	mu     sync.Mutex
	pend   pending
	subGen uint64

	// Owned by the Run goroutine.
	flows    map[uint64][]shaper.Flow
	degraded map[string]bool
	polling  bool
}

// New checks the options and returns an engine ready to Run.
func New(opt Options) (*Engine, error) {
	if opt.Source == nil {
		return nil, errors.New("watch: no source")
	}
	if opt.Downlink == nil && opt.Uplink == nil {
		return nil, errors.New("watch: no device to shape (need a downlink or an uplink backend)")
	}
	if opt.Poll <= 0 {
		opt.Poll = DefaultPoll
	}
	if opt.Resync <= 0 {
		opt.Resync = DefaultResync
	}
	if opt.Retry <= 0 {
		opt.Retry = DefaultRetry
	}
	e := &Engine{
		opt:      opt,
		obs:      opt.Observer,
		trigger:  make(chan struct{}, 1),
		flows:    map[uint64][]shaper.Flow{},
		degraded: map[string]bool{},
	}
	if e.obs == nil {
		e.obs = nopObserver{}
	}
	if opt.Downlink != nil {
		e.devs = append(e.devs, &device{dir: shaper.Downlink, be: opt.Downlink, pol: opt.DownlinkPolicy, needFull: true})
	}
	if opt.Uplink != nil {
		e.devs = append(e.devs, &device{dir: shaper.Uplink, be: opt.Uplink, pol: opt.UplinkPolicy, needFull: true})
	}
	if opt.Metrics != nil {
		for _, d := range e.devs {
			opt.Metrics.watchClasses(d)
		}
	}
	return e, nil
}

// SetPolicies replaces the devices' policies (a config reload); the next
// reconcile of each device uses them. Call RequestResync to apply them at
// once.
func (e *Engine) SetPolicies(dl, ul shaper.Policy) {
	for _, d := range e.devs {
		d.mu.Lock()
		d.pol = map[shaper.Direction]shaper.Policy{shaper.Downlink: dl, shaper.Uplink: ul}[d.dir]
		d.mu.Unlock()
	}
}

// Policy returns the policy the device of direction dir plans with.
func (e *Engine) Policy(dir shaper.Direction) (shaper.Policy, bool) {
	for _, d := range e.devs {
		if d.dir == dir {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.pol, true
		}
	}
	return shaper.Policy{}, false
}

// Polling reports whether the engine fell back to polling because the
// source has no events. It is meaningful once Run has started.
func (e *Engine) Polling() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.polling
}

// RequestResync asks for a full resync (e.g. after a config reload).
func (e *Engine) RequestResync(reason string) {
	e.mu.Lock()
	e.markFull(reason)
	e.mu.Unlock()
	e.kick()
}

// Cleanup removes every device's tree (for --cleanup-on-exit). Call it
// after Run has returned.
func (e *Engine) Cleanup(ctx context.Context) error {
	var errs []error
	for _, d := range e.devs {
		if _, err := d.be.Reset(ctx); err != nil {
			errs = append(errs, fmt.Errorf("remove tree on %s: %w", d.be.Dev(), err))
		}
	}
	return errors.Join(errs...)
}

// kick wakes the engine; a wake-up already queued absorbs this one.
func (e *Engine) kick() {
	select {
	case e.trigger <- struct{}{}:
	default:
	}
}

// RequestDeviceResync asks for every device to be read back and given
// every flow, from the engine's flows: the periodic resync. The source is
// not dumped: with events, their sequence numbers make its model exact (a
// gap, a loss, an undecodable message or a new subscription dumps at
// once); when polling, every poll dumps already. A Checker source is
// asked instead whether it still reads what it dialled. What drifts
// unseen is the kernel's tree, changed behind the daemon's back. Skipping
// the dump
// spares a periodic resync every rule's decode, a second rule model and
// the view of every session: about two thirds of its time.
func (e *Engine) RequestDeviceResync(reason string) {
	e.mu.Lock()
	e.pend.repair = true
	if e.pend.repairWhy == "" {
		e.pend.repairWhy = reason
	}
	e.mu.Unlock()
	e.kick()
}

// markFull queues a full resync; e.mu must be held.
func (e *Engine) markFull(reason string) {
	e.pend.full = true
	if e.pend.reason == "" {
		e.pend.reason = reason
	}
}

// take returns the queued work and clears it.
func (e *Engine) take() pending {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pend
	e.pend = pending{}
	return p
}

// Run keeps the trees in step until ctx is done. It returns nil on a
// graceful stop and leaves the trees in place; failures of the source or a
// device are retried after Options.Retry (doubling while they go on, up to
// maxBackoff), never fatal.
//
// Order at start-up (and after a lost subscription): subscribe to events
// first, then dump, so no change falls between the two.
func (e *Engine) Run(ctx context.Context) error {
	l := &runLoop{e: e, resync: time.NewTicker(e.opt.Resync), first: true, subNow: true, subCancel: func() {}}
	defer l.stop()
	e.RequestResync("start")
	for {
		if l.subNow {
			l.subscribe(ctx)
		}
		if l.waitingSub {
			l.retryAfter()
		}
		if done, again := l.wait(ctx); done {
			return nil
		} else if again {
			continue
		}
		p := e.take()
		if p.lost {
			// The subscription ended (gtp5g unloaded?): wait, subscribe
			// again, then dump, as at start-up.
			l.waitingSub = true
			why := p.endErr
			if why == nil {
				why = errors.New("event subscription ended")
			}
			e.degrade("events", why)
			continue
		}
		if !p.full && !p.repair && len(p.changes) == 0 {
			continue
		}
		if err := e.sync(ctx, p); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Whatever was queued is folded into a full resync, retried
			// after a wait: nothing is lost.
			e.mu.Lock()
			e.markFull("retry")
			e.mu.Unlock()
			l.retryAfter()
		} else {
			l.backoff = 0
		}
	}
}

// runLoop is Run's state: timers and the event subscription.
type runLoop struct {
	e          *Engine
	resync     *time.Ticker
	poll       *time.Ticker
	pollC      <-chan time.Time
	retryC     <-chan time.Time
	backoff    time.Duration // the last retry's wait (0: none since a success)
	first      bool          // no subscription made yet
	subNow     bool          // subscribe at the top of the loop
	waitingSub bool          // subscription lost or failed: retry after a wait
	subCancel  context.CancelFunc
}

// retryAfter arms the retry timer unless it is armed: see nextBackoff.
func (l *runLoop) retryAfter() {
	if l.retryC != nil {
		return
	}
	l.backoff = nextBackoff(l.backoff, l.e.opt.Retry)
	l.retryC = time.After(l.backoff)
}

// maxBackoff bounds the wait between retries (unless Options.Retry is
// longer): an operator who fixes the cause waits at most this long.
const maxBackoff = 30 * time.Second

// nextBackoff is the wait after a failure: base after the first one (or
// after a success), then twice the last wait, up to maxBackoff, so an
// outage that lasts (gtp5g unloaded, a device gone) is not retried at full
// rate for hours.
func nextBackoff(last, base time.Duration) time.Duration {
	if last <= 0 {
		return base
	}
	return min(2*last, max(maxBackoff, base))
}

func (l *runLoop) stop() {
	l.resync.Stop()
	l.subCancel()
	if l.poll != nil {
		l.poll.Stop()
	}
}

// subscribe (re)starts the event subscription, falling back to polling
// when the source has no events; a reconnect asks for a full resync.
func (l *runLoop) subscribe(ctx context.Context) {
	e := l.e
	l.subNow = false
	l.subCancel()
	var err error
	l.subCancel, err = e.subscribe(ctx)
	switch {
	case err == nil, errors.Is(err, ErrEventsNotSupported):
		polling := err != nil
		l.waitingSub, l.backoff = false, 0
		e.recover("events")
		e.setPolling(polling)
		if polling && l.poll == nil {
			l.poll = time.NewTicker(e.opt.Poll)
			l.pollC = l.poll.C
		} else if !polling && l.poll != nil {
			l.poll.Stop()
			l.poll, l.pollC = nil, nil
		}
		if !l.first {
			e.RequestResync("reconnect")
		}
	default:
		e.degrade("events", err)
		l.waitingSub = true
	}
	l.first = false
}

// wait blocks until there is work; done means ctx ended, again that the
// loop must go round without taking work (to subscribe again).
func (l *runLoop) wait(ctx context.Context) (done, again bool) {
	e := l.e
	select {
	case <-ctx.Done():
		return true, false
	case <-e.trigger:
	case <-l.pollC:
		e.mu.Lock()
		e.markFull("") // a poll is silent unless it changes something
		e.mu.Unlock()
		e.opt.Metrics.poll()
	case <-l.resync.C:
		e.RequestDeviceResync("periodic")
	case <-l.retryC:
		l.retryC = nil
		if l.waitingSub {
			l.subNow = true
			return false, true // subscribe again, then resync
		}
		e.RequestResync("retry")
	}
	return false, false
}

func (e *Engine) setPolling(v bool) {
	e.mu.Lock()
	e.polling = v
	e.mu.Unlock()
}

// subscribe starts the event pump for a new subscription.
func (e *Engine) subscribe(ctx context.Context) (context.CancelFunc, error) {
	sctx, cancel := context.WithCancel(ctx)
	ch, err := e.opt.Source.Events(sctx)
	if err != nil {
		cancel()
		return func() {}, err
	}
	e.mu.Lock()
	e.subGen++
	gen := e.subGen
	e.mu.Unlock()
	go e.pump(sctx, ch, gen)
	return cancel, nil
}

// pump moves events into the pending set and wakes the engine.
func (e *Engine) pump(ctx context.Context, ch <-chan Event, gen uint64) {
	for ev := range ch {
		e.mu.Lock()
		if ev.Kind == EventEnd {
			if gen == e.subGen {
				e.pend.endErr = ev.Err
			}
			e.mu.Unlock()
			continue // the channel closes next
		}
		e.opt.Metrics.event(ev.Kind)
		switch {
		case ev.Kind == EventChange && len(e.pend.changes) < maxQueuedEvents:
			e.pend.changes = append(e.pend.changes, ev)
		case ev.Kind == EventChange:
			e.pend.changes = nil
			e.markFull("more change events queued than the engine keeps")
		default: // EventResync, or a kind this engine does not know
			reason := "lost events"
			if ev.Err != nil {
				reason = "lost events: " + ev.Err.Error()
			}
			e.markFull(reason)
		}
		e.mu.Unlock()
		e.kick()
	}
	if ctx.Err() != nil {
		return // we cancelled it
	}
	e.mu.Lock()
	if gen == e.subGen {
		e.pend.lost = true
	}
	e.mu.Unlock()
	e.kick()
}

// sync folds what changed into the engine's flows and reconciles every
// device: a full resync dumps the source (and, with a reason, makes the
// backends read their devices back) in place of the change events queued
// before it, a repair reads the devices back without a dump; change
// events are folded in, in order, after it. Only
// the sessions that changed go to the backends, unless a device needs a
// full apply.
func (e *Engine) sync(ctx context.Context, p pending) error {
	changed := map[uint64]bool{}
	if p.full {
		if err := e.snapshot(ctx, p.reason, changed); err != nil {
			return err
		}
		// Every queued event arrived before the dump began, and the dump
		// holds its effect or a later state. Replayed on top of it, one
		// older than a lost event would undo what the dump found, and
		// nothing after would correct it.
		p.changes = nil
	}
	if p.repair && !(p.full && p.reason != "") { // a resync with a reason reads the devices already
		if c, ok := e.opt.Source.(Checker); ok {
			if err := c.Check(ctx); err != nil {
				e.degrade("source", err)
				return err
			}
		}
		e.reported(p.repairWhy)
		e.readDevicesBack()
	}
	for _, ev := range p.changes {
		flows, err := e.opt.Source.Apply(ev)
		if err != nil {
			e.degrade("source", err)
			e.mu.Lock()
			e.markFull("events: " + err.Error())
			e.mu.Unlock()
			e.kick()
			return err
		}
		if !sameFlows(e.flows[ev.SEID], flows) {
			changed[ev.SEID] = true
		}
		if len(flows) == 0 {
			delete(e.flows, ev.SEID)
		} else {
			e.flows[ev.SEID] = flows
		}
	}
	e.recover("source")
	return e.applyAll(ctx, changed)
}

// snapshot dumps the source and notes which sessions differ from the
// engine's flows. A resync with a reason also makes the backends read
// their devices back (drift repair) and apply every flow; a silent poll
// trusts the last write and sends only what changed.
func (e *Engine) snapshot(ctx context.Context, reason string, changed map[uint64]bool) error {
	if reason != "" {
		e.reported(reason)
	}
	e.opt.Metrics.dumped()
	flows, err := e.opt.Source.Snapshot(ctx)
	if err != nil {
		e.degrade("source", err)
		return err
	}
	next := shaper.GroupBySession(flows)
	for seid, fl := range next {
		if !sameFlows(e.flows[seid], fl) {
			changed[seid] = true
		}
	}
	for seid := range e.flows {
		if _, ok := next[seid]; !ok {
			changed[seid] = true
		}
	}
	e.flows = next
	if reason != "" {
		e.readDevicesBack()
	}
	return nil
}

// reported counts a resync and tells the observer why.
func (e *Engine) reported(reason string) {
	// Retries during an outage are counted, not reported: the outage
	// itself was (Degraded), once.
	if reason != "retry" {
		e.obs.Resync(reason)
	}
	e.opt.Metrics.resync(reason)
}

// readDevicesBack makes the next reconcile of every device read it from
// the kernel and apply every flow (drift repair).
func (e *Engine) readDevicesBack() {
	for _, d := range e.devs {
		d.be.Resync()
		d.needFull = true
	}
}

// applyAll reconciles every device; a device that fails does not stop the
// others.
func (e *Engine) applyAll(ctx context.Context, changed map[uint64]bool) error {
	var errs []error
	full := false
	for _, d := range e.devs {
		wasFull := d.needFull
		if err := e.applyDevice(ctx, d, changed); err != nil {
			errs = append(errs, err)
		} else if wasFull {
			full = true
		}
	}
	switch {
	case !e.opt.ReleaseMemory:
	case full:
		// A full apply's garbage (a dump, a device read back) is gone:
		// hand its pages back now, not over the minutes the runtime's
		// background scavenger would take, and fit the collector's
		// target to the heap now live (memory.go). Not after a failed
		// one: a device that keeps failing is retried every few seconds.
		releaseMemory()
	case len(errs) == 0:
		fitGC() // events move the live heap too
	}
	return errors.Join(errs...)
}

// applyDevice sends a device's changed sessions to its backend, or every
// flow when the device needs a full apply (or the backend asks for one).
func (e *Engine) applyDevice(ctx context.Context, d *device, changed map[uint64]bool) error {
	d.mu.Lock()
	pol := d.pol
	d.mu.Unlock()
	dev := d.be.Dev()
	start := time.Now()
	var rep shaper.Report
	err := shaper.ErrFullApplyNeeded
	if !d.needFull {
		if len(changed) == 0 {
			return nil
		}
		rep, err = d.be.Update(ctx, e.sessionsFor(d.dir, changed), pol)
	}
	if errors.Is(err, shaper.ErrFullApplyNeeded) {
		rep, err = d.be.Apply(ctx, e.flowsFor(d.dir), pol, shaper.ApplyOptions{NoClassList: true})
	}
	took := time.Since(start)
	e.opt.Metrics.applied(dev, rep, took, err)
	if err != nil {
		d.needFull = true
		e.degrade(dev, err)
		return err
	}
	d.needFull = false
	e.recover(dev)
	e.obs.Applied(dev, rep, took)
	if rep.ProblemsSame {
		return nil // an update that moved no problem: nothing to compare
	}
	if key := problemKey(rep.Problems); key != d.problems {
		d.problems = key
		e.obs.Problems(dev, rep.Problems)
	}
	return nil
}

// sessionsFor returns the changed sessions' flows of one direction (an
// empty list for a session with none left in that direction).
func (e *Engine) sessionsFor(dir shaper.Direction, changed map[uint64]bool) map[uint64][]shaper.Flow {
	out := make(map[uint64][]shaper.Flow, len(changed))
	for seid := range changed {
		var fl []shaper.Flow
		for _, f := range e.flows[seid] {
			if f.Direction == dir {
				fl = append(fl, f)
			}
		}
		out[seid] = fl
	}
	return out
}

// sameFlows reports whether two lists hold the same flows in the same
// order.
func sameFlows(a, b []shaper.Flow) bool { return slices.Equal(a, b) }

// flowsFor returns the current flows of one direction, in a stable order.
func (e *Engine) flowsFor(dir shaper.Direction) []shaper.Flow {
	n := 0
	for _, fl := range e.flows {
		for _, f := range fl {
			if f.Direction == dir {
				n++
			}
		}
	}
	out := make([]shaper.Flow, 0, n) // sized: grown by appends it would be copied again and again
	for _, fl := range e.flows {
		for _, f := range fl {
			if f.Direction == dir {
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b shaper.Flow) int { return shaper.CompareFlowID(a.ID, b.ID) })
	return out
}

func (e *Engine) degrade(stage string, err error) {
	e.opt.Metrics.failed(stage)
	if !e.degraded[stage] {
		e.degraded[stage] = true
		e.obs.Degraded(stage, err)
	}
}

func (e *Engine) recover(stage string) {
	if e.degraded[stage] {
		delete(e.degraded, stage)
		e.obs.Recovered(stage)
	}
}

// problemKey is a problem list's identity, in any order: a full plan and
// an update list the same problems in different orders.
func problemKey(ps []shaper.Problem) string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
