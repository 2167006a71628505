package htb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// statsSocket is the Backend's route-netlink socket for reading counters,
// apart from the one it writes through: a scrape's class dump at 65k
// classes takes most of a second, and events must not wait for it.
type statsSocket struct {
	mu sync.Mutex
	c  *rtnl
}

// FlowCounters implements shaper.Backend: the device's classes are dumped
// through the stats socket without the backend's lock, then joined with
// the kept plan's flow classes. A class the plan gave another flow while
// the dump ran is reported under its new flow. The kernel resumes a class
// dump by how many classes it has sent, so a class added or deleted while
// the dump runs can make it send another class twice or skip one: a
// class sent twice is reported once (two series with one name would make
// the scrape invalid); one skipped is missing from this scrape alone.
func (b *Backend) FlowCounters(ctx context.Context) ([]shaper.FlowCounters, error) {
	b.mu.Lock()
	if err := b.countersReadable(); err != nil || b.plan == nil {
		b.mu.Unlock()
		return nil, err
	}
	link, err := b.h.LinkByName(b.dev)
	n := b.plan.Classes.Len()
	b.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", b.dev, err)
	}
	read := make([]minorCounters, 0, n)
	b.stats.mu.Lock()
	err = b.withStatsSocket(ctx, link.Attrs().Index, link.Attrs().Name, func(c *rtnl) error {
		return eachClassCounters(c, link.Attrs().Index, func(minor uint16, cc shaper.Counters) {
			read = append(read, minorCounters{minor, cc})
		})
	})
	b.stats.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("dev %s: read class counters: %w", b.dev, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.countersReadable(); err != nil || b.plan == nil {
		return nil, err
	}
	return flowCounters(b.plan, read), nil
}

// countersReadable says why the flow classes' counters cannot be read
// now (nil: they can, or nothing was planned yet and there are none); b.mu
// is held. After a failed write the kept plan is dropped until the next
// apply reads the device back: which class is whose is not known, and an
// empty answer would read as a device without flows.
func (b *Backend) countersReadable() error {
	switch {
	case b.closed.Load():
		return fmt.Errorf("dev %s: backend closed", b.dev)
	case b.plan == nil && b.planned:
		return fmt.Errorf("dev %s: the tree is read back at the next apply after a failed write; its counters return then", b.dev)
	}
	return nil
}

// minorCounters is one class's counters as the dump gives them.
type minorCounters struct {
	minor uint16
	c     shaper.Counters
}

// flowCounters joins counters read from the kernel with the plan's flow
// classes: other classes are left out, and a class read twice is
// reported once.
func flowCounters(s *plan.State, read []minorCounters) []shaper.FlowCounters {
	out := make([]shaper.FlowCounters, 0, len(s.Minor))
	var seen minorSet
	for _, r := range read {
		c, ok := s.Classes.Get(r.minor)
		if !ok || c.Role != shaper.RoleFlow || seen.has(r.minor) {
			continue
		}
		seen.add(r.minor)
		out = append(out, shaper.FlowCounters{Flow: c.Flow, Class: uint32(s.Major)<<16 | uint32(r.minor), QFI: c.QFI, Counters: r.c})
	}
	return out
}

// withStatsSocket runs f on the stats socket, opened on first use in the
// backend's network namespace and checked to see the device the handle
// sees at ifindex; b.stats.mu is held. ctx's deadline, when sooner than
// the socket's own timeout, bounds each receive. A failed read closes the
// socket (the next scrape opens another); a closed backend opens none.
func (b *Backend) withStatsSocket(ctx context.Context, ifindex int, name string, f func(*rtnl) error) error {
	if b.closed.Load() {
		return errors.New("backend closed")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.stats.c == nil {
		c, err := dialRtnl(b.opts.NetNS)
		if err != nil {
			return err
		}
		b.stats.c = c
	}
	err := b.stats.c.setReceiveTimeout(receiveTimeout(ctx))
	var seen string
	if err == nil {
		seen, _, err = b.stats.c.linkIdentity(ifindex)
	}
	if err == nil && seen != name {
		err = fmt.Errorf("the stats socket sees %q at index %d, not %s", seen, ifindex, name)
	}
	if err == nil {
		err = f(b.stats.c)
	}
	if err != nil {
		b.stats.c.close()
		b.stats.c = nil
	}
	return err
}

// receiveTimeout is how long one receive may wait under ctx: the time to
// its deadline, when that is sooner than rtnlTimeout.
func receiveTimeout(ctx context.Context) time.Duration {
	d := rtnlTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = max(min(d, time.Until(dl)), time.Millisecond)
	}
	return d
}

// minorSet is a set of class minors (8 KB).
type minorSet [1 << 16 / 64]uint64

func (m *minorSet) has(minor uint16) bool { return m[minor/64]&(1<<(minor%64)) != 0 }
func (m *minorSet) add(minor uint16)      { m[minor/64] |= 1 << (minor % 64) }
