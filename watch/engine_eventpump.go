package watch

import "context"

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
			e.markFull(syncQueueFull, nil)
		default: // EventResync, or a kind this engine does not know
			e.markFull(syncLostEvents, ev.Err)
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
