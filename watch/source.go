package watch

import (
	"context"
	"errors"

	"github.com/free5gc/gtpqos/internal/enum"
	"github.com/free5gc/gtpqos/shaper"
)

// ErrEventsNotSupported is returned by Source.Events when the source cannot
// push changes (stock gtp5g, without the gtpqos patch). The engine then
// polls the source's snapshot instead.
var ErrEventsNotSupported = errors.New("change events not supported")

// Source yields the QoS view: the flows gtp5g's rules describe. It keeps a
// model of the rules per session, so that one change costs work on that
// session only.
type Source interface {
	// Snapshot reads every rule (a full dump), resets the source's model
	// to it, and returns every flow. It is the truth the engine converges
	// to.
	Snapshot(ctx context.Context) ([]shaper.Flow, error)
	// Events subscribes to change notifications. The channel is closed when
	// the subscription ends (ctx done, or the source lost its connection:
	// the engine then waits, resyncs and subscribes again). It returns an
	// error wrapping ErrEventsNotSupported when the source cannot notify.
	Events(ctx context.Context) (<-chan Event, error)
	// Apply folds one EventChange into the source's model and returns the
	// flows of the session it names after the change (none: the session
	// is gone). The engine calls it from its own goroutine, in the order
	// the events arrived, after the Snapshot that preceded them: events a
	// dump already reflects replay to the same state, because each one
	// carries its rule's whole state. An error asks for a full resync.
	Apply(ev Event) ([]shaper.Flow, error)
}

// Checker is a Source that can say, without a dump, whether it still
// reads what it dialled and subscribed to (GTP5GSource: gtp5g was neither
// unloaded nor reloaded). The periodic resync, which does not dump, asks;
// an error makes the engine retry as after a failed dump.
type Checker interface {
	Check(ctx context.Context) error
}

// EventKind says what an Event asks of the engine.
type EventKind uint8

const (
	// EventChange says that a rule of one session (SEID) changed: added,
	// updated or deleted. The engine folds it in with Source.Apply.
	EventChange EventKind = iota + 1
	// EventResync says that events were lost (ENOBUFS): the engine
	// re-reads everything, and events keep coming.
	EventResync
	// EventEnd says why the subscription ends (Err: a broken socket, a
	// message that does not decode); the channel closes after it. The
	// engine subscribes again after a wait and re-reads everything then,
	// once.
	EventEnd
)

var eventKinds = enum.Table[EventKind]{What: "event kind", Names: []enum.Name[EventKind]{
	{Value: EventChange, Name: "change"},
	{Value: EventResync, Name: "resync"},
	{Value: EventEnd, Name: "end"},
}}

// String returns "change", "resync" or "end" (event-kind(N) for another
// value).
func (k EventKind) String() string { return eventKinds.String(k) }

// Event is one change notification from a Source.
type Event struct {
	// Kind is what happened.
	Kind EventKind
	// SEID names the session that changed (EventChange).
	SEID uint64
	// Change is the source's own description of the change, for its Apply.
	Change any
	// Err says why a resync is needed (EventResync), e.g. ENOBUFS, or
	// why the subscription ends (EventEnd).
	Err error
}
