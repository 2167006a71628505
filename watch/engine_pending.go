package watch

// syncKind is why a sync is due. It decides what the sync does (a poll
// dumps the source and trusts the last write; every other full resync also
// reads the devices back; the periodic one reads them back without a dump)
// and names it in the log and in gtpqos_resyncs_total's reason label.
type syncKind uint8

const (
	syncNone        syncKind = iota // nothing due
	syncPoll                        // the poll timer, without events: silent unless it finds a change
	syncStart                       // Run began
	syncReconnect                   // a new event subscription after the first
	syncLostEvents                  // the source lost events (ENOBUFS, a gap, an unknown kind)
	syncQueueFull                   // more change events queued than maxQueuedEvents
	syncEventFailed                 // the source could not fold a change event in
	syncRetry                       // after a failure
	syncReload                      // RequestResync: a config reload
	syncPeriodic                    // the resync timer: the devices read back, no dump
)

// syncNames are the kinds' names in the log; the metric's label is the
// name with dashes for spaces.
var syncNames = [...]string{
	syncNone:        "none",
	syncPoll:        "poll",
	syncStart:       "start",
	syncReconnect:   "reconnect",
	syncLostEvents:  "lost events",
	syncQueueFull:   "queue full: more change events queued than the engine keeps",
	syncEventFailed: "events",
	syncRetry:       "retry",
	syncReload:      "reload",
	syncPeriodic:    "periodic",
}

func (k syncKind) String() string {
	if int(k) < len(syncNames) {
		return syncNames[k]
	}
	return "unknown"
}

// reason is what the log says of a resync of this kind with its cause
// (nil: none): "lost events", "lost events: ENOBUFS". The metric's label
// keeps the part before the colon.
func (k syncKind) reason(cause error) string {
	if cause == nil {
		return k.String()
	}
	return k.String() + ": " + cause.Error()
}

// readsBack says whether a full resync of this kind makes the backends read
// their devices back and apply every flow: every kind but a poll, which
// trusts the last write and sends only what changed.
func (k syncKind) readsBack() bool { return k != syncNone && k != syncPoll }

// pending is the work the event pump and the timers have queued for the
// engine.
type pending struct {
	changes []Event // the change events, in arrival order
	// full is the full resync due (syncNone: none). The first kind queued
	// names it, but a poll gives way to any kind queued after it.
	full    syncKind
	fullErr error // full's cause, for the log (nil: nothing to add)
	// repair asks for the periodic resync: every device read back and
	// applied in full from the engine's flows, without a dump.
	repair bool
	lost   bool  // the event subscription ended
	endErr error // why, when the source said
}

// RequestResync asks for a full resync after a config reload (logged and
// counted with the reason reload).
func (e *Engine) RequestResync() { e.requestFull(syncReload) }

// requestFull queues a full resync of kind k and wakes the engine.
func (e *Engine) requestFull(k syncKind) {
	e.mu.Lock()
	e.markFull(k, nil)
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
// the dump spares a periodic resync every rule's decode, a second rule
// model and the view of every session: about two thirds of its time.
func (e *Engine) RequestDeviceResync() {
	e.mu.Lock()
	e.pend.repair = true
	e.mu.Unlock()
	e.kick()
}

// markFull queues a full resync of kind k with its cause (nil: nothing to
// add); e.mu must be held.
func (e *Engine) markFull(k syncKind, cause error) {
	if e.pend.full == syncNone || e.pend.full == syncPoll {
		e.pend.full, e.pend.fullErr = k, cause
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
