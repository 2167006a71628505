package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/qosview/rulemodel"
	"github.com/free5gc/gtpqos/shaper"
)

// ViewFunc joins gtp5g's rules into QoS flows (qosview's join). Problems
// are rules it could not map (each naming its session and rule).
type ViewFunc func(qers []gtpnl.QER, pdrs []gtpnl.PDR, fars []gtpnl.FAR) (flows []shaper.Flow, problems []qosview.Problem)

// GTP5GSource is the Source backed by gtp5g through gtpnl. It dials lazily
// and again after any failure, so an unloaded and reloaded module is picked
// up without a restart.
type GTP5GSource struct {
	// Dial opens a client (gtpnl.Dial in production).
	Dial func() (*gtpnl.Client, error)
	// View joins the dumps into flows.
	View ViewFunc
	// WithEvents enables Subscribe (the gtp5g patch's QoS events).
	WithEvents bool
	// EventsBuffer is the event socket's receive buffer in bytes (0:
	// gtpnl.DefaultEventsBuffer). A burst of events larger than it costs a
	// full dump.
	EventsBuffer int
	// OnViewProblems, if set, is called with the view's problems whenever
	// they differ from the last dump's (an empty list: all solved).
	OnViewProblems func(problems []string)
	// OnConnect, if set, is called with every newly dialled client before
	// it is used, e.g. to set the patch's mark mode again after gtp5g was
	// reloaded (a fresh module starts with marking off). An error fails
	// the call that dialled, and the next call dials again.
	OnConnect func(c *gtpnl.Client) error

	// dialConn replaces Dial in tests.
	dialConn func() (gtp5gConn, error)

	mu       sync.Mutex
	c        gtp5gConn
	problems string

	// model is the rules by session (engine goroutine only: Snapshot and
	// Apply); viewProblems the view's problems by session.
	model        *rulemodel.Model
	viewProblems map[uint64][]string
}

// gtp5gConn is what the source needs from a gtpnl client.
type gtp5gConn interface {
	QERs() ([]gtpnl.QER, error)
	PDRs() ([]gtpnl.PDR, error)
	FARs() ([]gtpnl.FAR, error)
	// Alive says whether the module is still the one dialled.
	Alive() error
	Close() error
	// subscribe joins the event group; buffer > 0 sets the socket's
	// receive buffer.
	subscribe(ctx context.Context, buffer int) (eventStream, error)
}

// eventStream is a QoS event subscription (*gtpnl.Subscription).
type eventStream interface {
	Receive() ([]gtpnl.Event, error)
	Close() error
}

// clientConn adapts *gtpnl.Client to gtp5gConn.
type clientConn struct{ *gtpnl.Client }

func (c clientConn) subscribe(ctx context.Context, buffer int) (eventStream, error) {
	sub, err := c.Client.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	if buffer <= 0 {
		return sub, nil
	}
	if err := sub.SetReadBuffer(buffer); err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// client returns the open client, dialling if needed.
func (s *GTP5GSource) client() (gtp5gConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		return s.c, nil
	}
	if s.dialConn != nil {
		c, err := s.dialConn()
		if err != nil {
			return nil, err
		}
		s.c = c
		return c, nil
	}
	c, err := s.Dial()
	if err != nil {
		return nil, err
	}
	if s.OnConnect != nil {
		if err := s.OnConnect(c); err != nil {
			c.Close()
			return nil, err
		}
	}
	s.c = clientConn{c}
	return s.c, nil
}

// drop closes a client that failed, so the next call dials again.
func (s *GTP5GSource) drop(c gtp5gConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == c {
		s.c.Close()
		s.c = nil
	}
}

// Check says, without a dump, whether gtp5g is still the module the
// source dialled: the periodic resync asks, as it reads the devices and
// not gtp5g. A module unloaded or reloaded leaves the event socket silent
// rather than broken, so this is how the daemon notices; on an error the
// client (and with it the subscription) is closed, and the next dump or
// subscription dials afresh.
func (s *GTP5GSource) Check(context.Context) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.Alive(); err != nil {
		s.drop(c)
		return err
	}
	return nil
}

// Close closes the client.
func (s *GTP5GSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return nil
	}
	err := s.c.Close()
	s.c = nil
	return err
}

// Snapshot dumps QERs, PDRs and FARs, makes them the model and joins them.
// A failed dump closes the client (gtp5g may have been unloaded): the next
// call dials again.
func (s *GTP5GSource) Snapshot(ctx context.Context) ([]shaper.Flow, error) {
	c, err := s.client()
	if err != nil {
		return nil, err
	}
	qers, err := c.QERs()
	if err != nil {
		s.drop(c)
		return nil, err
	}
	pdrs, err := c.PDRs()
	if err != nil {
		s.drop(c)
		return nil, err
	}
	fars, err := c.FARs()
	if err != nil {
		s.drop(c)
		return nil, err
	}
	// The dump replaces the model: let the old one go before the new one
	// is built, not after (tens of megabytes at 65k sessions).
	s.model = nil
	s.model = rulemodel.New(qers, pdrs, fars)
	flows, problems := s.View(qers, pdrs, fars)
	s.viewProblems = map[uint64][]string{}
	for _, p := range problems {
		s.viewProblems[p.SEID] = append(s.viewProblems[p.SEID], p.String())
	}
	s.reportProblems()
	return flows, nil
}

// Apply folds a rule event into the model and joins that session's rules
// alone.
func (s *GTP5GSource) Apply(ev Event) ([]shaper.Flow, error) {
	ge, ok := ev.Change.(gtpnl.Event)
	if !ok {
		return nil, fmt.Errorf("change event of seid %d carries no gtp5g rule", ev.SEID)
	}
	if s.model == nil {
		s.model = rulemodel.New(nil, nil, nil)
	}
	seid := applyEvent(s.model, ge)
	flows, problems := s.View(s.model.Rules(seid))
	var lines []string
	for _, p := range problems {
		lines = append(lines, p.String())
	}
	if s.viewProblems == nil {
		s.viewProblems = map[uint64][]string{}
	}
	if strings.Join(lines, "\n") != strings.Join(s.viewProblems[seid], "\n") {
		if len(lines) == 0 {
			delete(s.viewProblems, seid)
		} else {
			s.viewProblems[seid] = lines
		}
		s.reportProblems()
	}
	return flows, nil
}

// Events subscribes to the patch's QoS events. Lost events (ENOBUFS) and
// messages that do not decode become EventResync; any other receive error
// ends the subscription (the engine waits, subscribes again and dumps).
func (s *GTP5GSource) Events(ctx context.Context) (<-chan Event, error) {
	if !s.WithEvents {
		return nil, ErrEventsNotSupported
	}
	c, err := s.client()
	if err != nil {
		return nil, err
	}
	sub, err := c.subscribe(ctx, s.EventsBuffer)
	if err != nil {
		if errors.Is(err, gtpnl.ErrNotSupported) {
			return nil, fmt.Errorf("%w: %v", ErrEventsNotSupported, err)
		}
		s.drop(c)
		return nil, err
	}
	ch := make(chan Event, 1024)
	stop := context.AfterFunc(ctx, func() { sub.Close() })
	go func() {
		defer close(ch)
		defer stop()
		defer sub.Close()
		for {
			evs, err := sub.Receive()
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, gtpnl.ErrResync) {
				send(ctx, ch, Event{Kind: EventResync, Err: err})
				continue
			}
			if err != nil {
				// Socket broken or message undecodable: the engine
				// subscribes again and dumps then. A resync asked for here
				// as well would dump twice.
				send(ctx, ch, Event{Kind: EventEnd, Err: err})
				return
			}
			for _, ev := range evs {
				send(ctx, ch, Event{Kind: EventChange, SEID: eventSEID(ev), Change: ev})
			}
		}
	}()
	return ch, nil
}

func send(ctx context.Context, ch chan<- Event, ev Event) {
	select {
	case ch <- ev:
	case <-ctx.Done():
	}
}

// applyEvent folds one event into the model: an add or update sets the
// rule's state, a delete removes it. It returns the session the rule
// belongs to.
func applyEvent(m *rulemodel.Model, ev gtpnl.Event) uint64 {
	seid := eventSEID(ev)
	del := ev.Op == gtpnl.EventDelete
	switch {
	case ev.QER != nil && del:
		m.DeleteQER(seid, ev.QER.ID)
	case ev.QER != nil:
		m.SetQER(ev.QER)
	case ev.PDR != nil && del:
		m.DeletePDR(seid, ev.PDR.ID)
	case ev.PDR != nil:
		m.SetPDR(ev.PDR)
	case ev.FAR != nil && del:
		m.DeleteFAR(seid, ev.FAR.ID)
	case ev.FAR != nil:
		m.SetFAR(ev.FAR)
	}
	return seid
}

// eventSEID returns the session an event's object belongs to.
func eventSEID(ev gtpnl.Event) uint64 {
	switch {
	case ev.QER != nil:
		return ev.QER.SEID
	case ev.PDR != nil:
		return ev.PDR.SEID
	case ev.FAR != nil:
		return ev.FAR.SEID
	}
	return 0
}

// reportProblems calls OnViewProblems when the set of problems changed.
func (s *GTP5GSource) reportProblems() {
	seids := make([]uint64, 0, len(s.viewProblems))
	for seid := range s.viewProblems {
		seids = append(seids, seid)
	}
	slices.Sort(seids)
	var all []string
	for _, seid := range seids {
		all = append(all, s.viewProblems[seid]...)
	}
	key := strings.Join(all, "\n")
	s.mu.Lock()
	changed := key != s.problems
	s.problems = key
	s.mu.Unlock()
	if changed && s.OnViewProblems != nil {
		s.OnViewProblems(all)
	}
}
