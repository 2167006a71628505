package watch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// sync folds what changed into the engine's flows and reconciles every
// device: a full resync dumps the source (and, unless it is a poll, makes
// the backends read their devices back) in place of the change events
// queued before it, a repair reads the devices back without a dump; change
// events are folded in, in order, after it. Only the sessions that changed
// go to the backends, unless a device needs a full apply.
func (e *Engine) sync(ctx context.Context, p pending) error {
	changed := map[uint64]bool{}
	if p.full != syncNone {
		if err := e.snapshot(ctx, p.full, p.fullErr, changed); err != nil {
			return err
		}
		// Every queued event arrived before the dump began, and the dump
		// holds its effect or a later state. Replayed on top of it, one
		// older than a lost event would undo what the dump found, and
		// nothing after would correct it.
		p.changes = nil
	}
	if p.repair && !p.full.readsBack() { // that full resync reads the devices already
		if c, ok := e.opt.Source.(Checker); ok {
			if err := c.Check(ctx); err != nil {
				e.degrade("source", err)
				return err
			}
		}
		e.reported(syncPeriodic, nil)
		e.readDevicesBack()
	}
	for _, ev := range p.changes {
		flows, err := e.opt.Source.Apply(ev)
		if err != nil {
			e.degrade("source", err)
			e.mu.Lock()
			e.markFull(syncEventFailed, err)
			e.mu.Unlock()
			e.kick()
			return err
		}
		if !sameFlows(e.flows[ev.SEID], flows) {
			changed[ev.SEID] = true
		}
		if len(flows) == 0 {
			delete(e.flows, ev.SEID)
		} else {
			e.flows[ev.SEID] = flows
		}
	}
	e.recover("source")
	return e.applyAll(ctx, changed)
}

// snapshot dumps the source and notes which sessions differ from the
// engine's flows. A resync of kind k (with its cause) also makes the
// backends read their devices back (drift repair) and apply every flow;
// a poll is silent, trusts the last write and sends only what changed.
func (e *Engine) snapshot(ctx context.Context, k syncKind, cause error, changed map[uint64]bool) error {
	if k.readsBack() {
		e.reported(k, cause)
	}
	e.opt.Metrics.dumped()
	flows, err := e.opt.Source.Snapshot(ctx)
	if err != nil {
		e.degrade("source", err)
		return err
	}
	next := shaper.GroupBySession(flows)
	for seid, fl := range next {
		if !sameFlows(e.flows[seid], fl) {
			changed[seid] = true
		}
	}
	for seid := range e.flows {
		if _, ok := next[seid]; !ok {
			changed[seid] = true
		}
	}
	e.flows = next
	if k.readsBack() {
		e.readDevicesBack()
	}
	return nil
}

// reported counts a resync of kind k and tells the observer why, with its
// cause (nil: nothing to add).
func (e *Engine) reported(k syncKind, cause error) {
	reason := k.reason(cause)
	// Retries during an outage are counted, not reported: the outage
	// itself was (Degraded), once.
	if k != syncRetry {
		e.obs.Resync(reason)
	}
	e.opt.Metrics.resync(reason)
}

// readDevicesBack makes the next reconcile of every device read it from
// the kernel and apply every flow (drift repair).
func (e *Engine) readDevicesBack() {
	for _, d := range e.devs {
		d.be.Resync()
		d.needFull = true
	}
}

// applyAll reconciles every device; a device that fails does not stop the
// others.
func (e *Engine) applyAll(ctx context.Context, changed map[uint64]bool) error {
	var errs []error
	full := false
	for _, d := range e.devs {
		wasFull := d.needFull
		if err := e.applyDevice(ctx, d, changed); err != nil {
			errs = append(errs, err)
		} else if wasFull {
			full = true
		}
	}
	switch {
	case !e.opt.ReleaseMemory:
	case full:
		// A full apply's garbage (a dump, a device read back) is gone:
		// hand its pages back now, not over the minutes the runtime's
		// background scavenger would take, and fit the collector's
		// target to the heap now live (memory.go). Not after a failed
		// one: a device that keeps failing is retried every few seconds.
		releaseMemory()
	case len(errs) == 0:
		fitGC() // events move the live heap too
	}
	return errors.Join(errs...)
}

// applyDevice sends a device's changed sessions to its backend, or every
// flow when the device needs a full apply (or the backend asks for one).
func (e *Engine) applyDevice(ctx context.Context, d *device, changed map[uint64]bool) error {
	d.mu.Lock()
	pol := d.pol
	d.mu.Unlock()
	dev := d.be.Dev()
	start := time.Now()
	var rep shaper.Report
	err := shaper.ErrFullApplyNeeded
	if !d.needFull {
		if len(changed) == 0 {
			return nil
		}
		rep, err = d.be.Update(ctx, e.sessionsFor(d.dir, changed), pol)
	}
	if errors.Is(err, shaper.ErrFullApplyNeeded) {
		rep, err = d.be.Apply(ctx, e.flowsFor(d.dir), pol, shaper.ApplyOptions{NoClassList: true})
	}
	took := time.Since(start)
	e.opt.Metrics.applied(dev, rep, took, err)
	if err != nil {
		d.needFull = true
		e.degrade(dev, err)
		return err
	}
	d.needFull = false
	e.recover(dev)
	e.obs.Applied(dev, rep, took)
	if rep.ProblemsSame {
		return nil // an update that moved no problem: nothing to compare
	}
	if key := problemKey(rep.Problems); key != d.problems {
		d.problems = key
		e.obs.Problems(dev, rep.Problems)
	}
	return nil
}

// sessionsFor returns the changed sessions' flows of one direction (an
// empty list for a session with none left in that direction).
func (e *Engine) sessionsFor(dir shaper.Direction, changed map[uint64]bool) map[uint64][]shaper.Flow {
	out := make(map[uint64][]shaper.Flow, len(changed))
	for seid := range changed {
		var fl []shaper.Flow
		for _, f := range e.flows[seid] {
			if f.Direction == dir {
				fl = append(fl, f)
			}
		}
		out[seid] = fl
	}
	return out
}

// sameFlows reports whether two lists hold the same flows in the same
// order.
func sameFlows(a, b []shaper.Flow) bool { return slices.Equal(a, b) }

// flowsFor returns the current flows of one direction, in a stable order.
func (e *Engine) flowsFor(dir shaper.Direction) []shaper.Flow {
	n := 0
	for _, fl := range e.flows {
		for _, f := range fl {
			if f.Direction == dir {
				n++
			}
		}
	}
	out := make([]shaper.Flow, 0, n) // sized: grown by appends it would be copied again and again
	for _, fl := range e.flows {
		for _, f := range fl {
			if f.Direction == dir {
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b shaper.Flow) int { return shaper.CompareFlowID(a.ID, b.ID) })
	return out
}

// problemKey is a problem list's identity, in any order: a full plan and
// an update list the same problems in different orders.
func problemKey(ps []shaper.Problem) string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
