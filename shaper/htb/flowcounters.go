package htb

import (
	"context"
	"fmt"
	"sync"

	"github.com/free5gc/gtpqos/shaper"
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
// the dump ran is reported under its new flow.
func (b *Backend) FlowCounters(ctx context.Context) ([]shaper.FlowCounters, error) {
	b.mu.Lock()
	if b.plan == nil {
		b.mu.Unlock()
		return nil, nil
	}
	link, err := b.h.LinkByName(b.dev)
	n := b.plan.classes.len()
	b.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", b.dev, err)
	}
	type minorCounters struct {
		minor uint16
		c     shaper.Counters
	}
	read := make([]minorCounters, 0, n)
	b.stats.mu.Lock()
	err = b.withStatsSocket(link.Attrs().Index, link.Attrs().Name, func(c *rtnl) error {
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
	if b.plan == nil {
		return nil, nil
	}
	out := make([]shaper.FlowCounters, 0, len(b.plan.minor))
	for _, r := range read {
		c, ok := b.plan.classes.get(r.minor)
		if !ok || c.Role != shaper.RoleFlow {
			continue
		}
		out = append(out, shaper.FlowCounters{Flow: c.Flow, Class: uint32(b.plan.major)<<16 | uint32(r.minor), QFI: c.QFI, Counters: r.c})
	}
	return out, nil
}

// withStatsSocket runs f on the stats socket, opened on first use in the
// backend's network namespace and checked to see the device the handle
// sees at ifindex; b.stats.mu is held. A failed read closes the socket
// (the next scrape opens another).
func (b *Backend) withStatsSocket(ifindex int, name string, f func(*rtnl) error) error {
	if b.stats.c == nil {
		c, err := dialRtnl(b.opts.NetNS)
		if err != nil {
			return err
		}
		b.stats.c = c
	}
	seen, _, err := b.stats.c.linkIdentity(ifindex)
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
