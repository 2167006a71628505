package watch

import (
	"context"
	"errors"
	"fmt"
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
	// needFull says the next reconcile must apply every flow (start, any
	// resync but a poll, a failure); otherwise only changed sessions go to
	// the backend.
	needFull bool

	// mu guards pol (replaced by SetPolicies while the engine runs).
	mu  sync.Mutex
	pol shaper.Policy
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
