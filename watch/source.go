package watch

import (
	"context"
	"errors"

	"github.com/free5gc/gtpqos/shaper"
)

// ErrEventsNotSupported is returned by Source.Events when the source cannot
// push changes (stock gtp5g, without the gtpqos patch). The engine then
// polls the source's snapshot instead.
var ErrEventsNotSupported = errors.New("change events not supported")

// Source yields the QoS view: the flows gtp5g's rules describe.
type Source interface {
	// Snapshot reads every flow (a full dump). It is the truth the engine
	// converges to.
	Snapshot(ctx context.Context) ([]shaper.Flow, error)
	// Events subscribes to change notifications. The channel is closed when
	// the subscription ends (ctx done, or the source lost its connection:
	// the engine then waits, resyncs and subscribes again). It returns an
	// error wrapping ErrEventsNotSupported when the source cannot notify.
	Events(ctx context.Context) (<-chan Event, error)
}

// SessionSource is a Source that can also read one session's flows, so an
// event costs a per-session read instead of a full dump.
type SessionSource interface {
	Source
	// Session returns the flows of one PFCP session (none when the session
	// is gone).
	Session(ctx context.Context, seid uint64) ([]shaper.Flow, error)
}

// EventKind says what an Event asks of the engine.
type EventKind uint8

const (
	// EventChange says that the rules of one session (SEID) changed: added,
	// updated or deleted. The engine re-reads that session.
	EventChange EventKind = iota + 1
	// EventResync says that events were lost (ENOBUFS) or could not be
	// decoded: the engine re-reads everything.
	EventResync
)

// String returns "change" or "resync".
func (k EventKind) String() string {
	switch k {
	case EventChange:
		return "change"
	case EventResync:
		return "resync"
	default:
		return "unknown"
	}
}

// Event is one change notification from a Source.
type Event struct {
	// Kind is what happened.
	Kind EventKind
	// SEID names the session that changed (EventChange).
	SEID uint64
	// Err says why a resync is needed (EventResync), e.g. ENOBUFS.
	Err error
}
