package watch

import (
	"context"
	"errors"
	"time"
)

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
	e.requestFull(syncStart)
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
		if p.full == syncNone && !p.repair && len(p.changes) == 0 {
			continue
		}
		if err := e.sync(ctx, p); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Whatever was queued is folded into a full resync, retried
			// after a wait: nothing is lost.
			e.mu.Lock()
			e.markFull(syncRetry, nil)
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
			e.requestFull(syncReconnect)
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
		e.markFull(syncPoll, nil) // silent unless it changes something
		e.mu.Unlock()
		e.opt.Metrics.poll()
	case <-l.resync.C:
		e.RequestDeviceResync()
	case <-l.retryC:
		l.retryC = nil
		if l.waitingSub {
			l.subNow = true
			return false, true // subscribe again, then resync
		}
		e.requestFull(syncRetry)
	}
	return false, false
}

func (e *Engine) setPolling(v bool) {
	e.mu.Lock()
	e.polling = v
	e.mu.Unlock()
}
