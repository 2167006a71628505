package watch

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

// RequestResync asks for a full resync (e.g. after a config reload).
func (e *Engine) RequestResync(reason string) {
	e.mu.Lock()
	e.markFull(reason)
	e.mu.Unlock()
	e.kick()
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
