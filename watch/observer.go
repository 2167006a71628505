package watch

import (
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// Observer receives what the engine does, for logging. The engine calls it
// from its own goroutine, one call at a time; calls must not block long.
//
// The engine keeps the noise down itself: Applied is called for every
// reconcile (an Observer should log only when rep.Changes is non-empty),
// Degraded once when a stage starts failing (not on every retry) and
// Recovered once when it works again.
type Observer interface {
	// Applied reports one reconcile of one device.
	Applied(dev string, rep shaper.Report, took time.Duration)
	// Problems reports the planner's problems for a device whenever the set
	// of problems changes (an empty list: all solved).
	Problems(dev string, problems []shaper.Problem)
	// Resync reports a full resync and why ("start", "periodic", "lost
	// events: ...", "reconnect").
	Resync(reason string)
	// Degraded reports that stage ("source", "events", or a device name)
	// started failing; the engine keeps retrying.
	Degraded(stage string, err error)
	// Recovered reports that stage works again.
	Recovered(stage string)
	// Note reports a one-line fact about the daemon ("gtp5g reconnected:
	// mark mode off -> flow").
	Note(msg string)
	// ViewProblems reports the gtp5g rules the QoS view could not map, one
	// line each, whenever the set changes (empty: every rule maps again).
	ViewProblems(problems []string)
}

// nopObserver discards everything.
type nopObserver struct{}

func (nopObserver) Applied(string, shaper.Report, time.Duration) {}
func (nopObserver) Problems(string, []shaper.Problem)            {}
func (nopObserver) Resync(string)                                {}
func (nopObserver) Degraded(string, error)                       {}
func (nopObserver) Recovered(string)                             {}
func (nopObserver) Note(string)                                  {}
func (nopObserver) ViewProblems([]string)                        {}
