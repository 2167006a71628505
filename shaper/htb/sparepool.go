package htb

import (
	"context"
	"sync"

	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// growChunk is how many spare classes the pool creates between two
// progress reports.
const growChunk = 16

// grower creates the pool's spare classes in the background, one class at
// a time under the backend's lock, so an event waits at most for one class
// create.
type grower struct {
	kick   chan struct{} // size 1: a pending request absorbs the next
	stop   context.CancelFunc
	ctx    context.Context
	done   sync.WaitGroup
	closed bool
}

// startGrower starts the background goroutine (incremental mode only).
func (b *Backend) startGrower() {
	ctx, cancel := context.WithCancel(context.Background())
	b.grow = &grower{kick: make(chan struct{}, 1), stop: cancel, ctx: ctx}
	b.grow.done.Add(1)
	go b.growLoop()
}

// requestSpares asks the grower to fill the pool; b.mu is held.
func (b *Backend) requestSpares() {
	if b.grow == nil || b.plan == nil || len(b.plan.Spares) >= b.plan.Pol.Pool {
		return
	}
	select {
	case b.grow.kick <- struct{}{}:
	default:
	}
}

// refillIfLow asks the grower to fill the pool once an Update has left it
// at half its size or less; b.mu is held. Filling only then keeps the
// kernel's class creates (each walks every class of the qdisc under the
// RTNL lock: milliseconds at tens of thousands of classes, and every other
// tc write waits) away from events while adds and removes balance: a
// removed flow's class is parked and the next new flow takes it.
func (b *Backend) refillIfLow() {
	if b.plan != nil && len(b.plan.Spares) <= b.plan.Pol.Pool/2 {
		b.requestSpares()
	}
}

func (b *Backend) growLoop() {
	defer b.grow.done.Done()
	for {
		select {
		case <-b.grow.ctx.Done():
			return
		case <-b.grow.kick:
		}
		for n := 1; ; n++ {
			ready, want, more := b.growOne()
			if !more || n%growChunk == 0 {
				if b.opts.OnPool != nil && want > 0 {
					b.opts.OnPool(b.dev, ready, want)
				}
			}
			if !more || b.grow.ctx.Err() != nil {
				break
			}
		}
	}
}

// growOne creates one spare class if the pool lacks one; more says whether
// another is due. A failed create drops the plan, so the next apply reads
// the device and plans in full.
func (b *Backend) growOne() (ready, want int, more bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.plan == nil || b.rec.held == nil {
		return 0, 0, false // a full apply comes first (and asks again)
	}
	s := b.plan
	want = s.Pol.Pool
	if len(s.Spares) >= want {
		return len(s.Spares), want, false
	}
	m, ok := s.Alloc()
	if !ok {
		return len(s.Spares), want, false
	}
	c := plan.SpareClass(s.Base, m)
	if _, err := b.rec.writeDelta(b.grow.ctx, &plan.Delta{Create: []plan.Class{c}}); err != nil {
		s.Free(m)
		b.plan = nil
		return 0, want, false
	}
	b.updated = true
	s.Classes.Set(c.Minor, c)
	s.Spares = append(s.Spares, m) // alloc gives ascending minors
	return len(s.Spares), want, len(s.Spares) < want
}

// stopGrower ends the background goroutine and waits for it.
func (b *Backend) stopGrower() {
	if b.grow == nil || b.grow.closed {
		return
	}
	b.grow.closed = true
	b.grow.stop()
	b.grow.done.Wait()
}
