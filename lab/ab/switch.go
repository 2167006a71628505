package ab

import (
	"context"
	"errors"
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
)

// switcher holds one device's backend and opens another when an arm asks
// for a different one. Only one is open at a time: a writer's Open takes
// the device's lock, and the next backend's tree must not meet the last
// one's, so the last one removes its tree and closes first.
type switcher struct {
	dev  string
	opts backends.Options
	name string
	be   shaper.Backend
}

// newSwitcher opens o.Backend on dev.
func newSwitcher(dev string, o backends.Options) (*switcher, error) {
	s := &switcher{dev: dev, opts: o}
	be, err := backends.Open(dev, o)
	if err != nil {
		return nil, err
	}
	s.be, s.name = be, nameOf(be, o.Backend)
	return s, nil
}

// nameOf is the backend's kind, else asked ("": the default).
func nameOf(be shaper.Backend, asked string) string {
	if n, ok := be.(shaper.Named); ok {
		return n.Name()
	}
	return or(asked, backends.Default)
}

// use makes the backend name (an arm's policy's; "": the default) the
// open one, removing the current one's tree first.
func (s *switcher) use(ctx context.Context, name string) (shaper.Backend, error) {
	name = or(name, backends.Default)
	if s.be != nil && name == s.name {
		return s.be, nil
	}
	var err error
	if s.be != nil {
		_, err = s.be.Reset(ctx)
		err = errors.Join(err, s.be.Close())
	}
	if err != nil {
		s.be = nil
		return nil, fmt.Errorf("backend %s: remove its tree before switching to %s: %w", s.name, name, err)
	}
	o := s.opts
	o.Backend = name
	be, err := backends.Open(s.dev, o)
	if err != nil {
		s.be = nil
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	s.be, s.name = be, name
	return be, nil
}

// current is the open backend (nil after a failed switch).
func (s *switcher) current() (shaper.Backend, error) {
	if s.be == nil {
		return nil, errors.New("no backend open (a switch failed)")
	}
	return s.be, nil
}

// reset removes the open backend's tree.
func (s *switcher) reset(ctx context.Context) error {
	if s.be == nil {
		return nil
	}
	_, err := s.be.Reset(ctx)
	return err
}

// close closes the open backend.
func (s *switcher) close() error {
	if s.be == nil {
		return nil
	}
	return s.be.Close()
}

// counters reads the open backend's class counters and, where a flow's
// class is not a tc class of its own (edt's flows share classes), each
// flow's own counters under flowCounterKey. Per-flow HTB classes are read
// once: their flow counters are the same class dump again.
func (s *switcher) counters(ctx context.Context) (map[string]shaper.Counters, error) {
	be, err := s.current()
	if err != nil {
		return nil, err
	}
	out, err := be.Counters(ctx)
	if err != nil || !flowsOutsideClasses(be.Classes(), out) {
		return out, err
	}
	fcs, err := be.FlowCounters(ctx)
	if err != nil {
		return nil, err
	}
	for _, fc := range fcs {
		out[flowCounterKey(fc.Flow)] = fc.Counters
	}
	return out, nil
}

// flowsOutsideClasses says whether a planned flow's class is missing from
// the class counters.
func flowsOutsideClasses(cs []shaper.ClassState, counters map[string]shaper.Counters) bool {
	for _, c := range cs {
		if _, ok := counters[c.Handle]; c.Role == shaper.RoleFlow && !ok {
			return true
		}
	}
	return false
}

// flowCounterKey is where counters holds a flow's own counters.
func flowCounterKey(id shaper.FlowID) string { return "flow " + id.String() }
