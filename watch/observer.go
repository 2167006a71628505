package watch

import "time"

// Observer receives what the engine does, for logging. The engine calls it
// from its own goroutine, one call at a time; calls must not block long.
//
// The engine keeps the noise down itself: Applied is called for every
// reconcile (an Observer should log only when res.Changes is non-empty),
// Degraded once when a stage starts failing (not on every retry) and
// Recovered once when it works again.
type Observer interface {
	// Applied reports one reconcile of one device.
	Applied(dev string, res Result, took time.Duration)
	// Problems reports the planner's problems for a device whenever the set
	// of problems changes (an empty list: all solved).
	Problems(dev string, problems []Problem)
	// Resync reports a full resync and why ("start", "periodic", "lost
	// events: ...", "reconnect").
	Resync(reason string)
	// Degraded reports that stage ("source", "events", or a device name)
	// started failing; the engine keeps retrying.
	Degraded(stage string, err error)
	// Recovered reports that stage works again.
	Recovered(stage string)
}

// nopObserver discards everything.
type nopObserver struct{}

func (nopObserver) Applied(string, Result, time.Duration) {}
func (nopObserver) Problems(string, []Problem)            {}
func (nopObserver) Resync(string)                         {}
func (nopObserver) Degraded(string, error)                {}
func (nopObserver) Recovered(string)                      {}
