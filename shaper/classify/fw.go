package classify

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
)

// Where the fw probe briefly lives.
const (
	// probePrio is where the fw probe filter briefly lives.
	probePrio uint16 = 0xfff0
	// probeMinor is the class the probe filter names (it need not exist).
	probeMinor uint32 = 0x2
)

// Fw classifies by skb->mark with cls_fw: one fw filter per flow
// (handle = mark, flowid = the flow's class), all at FwPrio, as the seed
// experiment did by hand, with mask shaper.MarkMask (cls_fw matches mark & mask, so
// bits 24-31 do not matter). Flows without a mark are skipped.
type Fw struct{ writes int }

// NewFw returns the fw classifier.
func NewFw() *Fw { return &Fw{} }

// Kind returns KindFw.
func (c *Fw) Kind() Kind { return KindFw }

func (c *Fw) TakeWrites() int { n := c.writes; c.writes = 0; return n }

// Owns implements FilterOwner: the fw filters at FwPrio for every
// protocol.
func (c *Fw) Owns(f netlink.Filter) bool {
	_, ok := f.(*netlink.FwFilter)
	return ok && f.Attrs().Priority == FwPrio && f.Attrs().Protocol == unix.ETH_P_ALL
}

// MissingKey implements KeyNeeder: fw binds by mark.
func (c *Fw) MissingKey(e Entry) string { return missingMark(e) }

// missingMark is the mark classifiers' KeyNeeder: they bind by mark.
func missingMark(e Entry) string {
	if e.Mark == 0 {
		return "mark"
	}
	return ""
}

func fwFilter(env Env, mark, classID uint32, prio uint16) *netlink.FwFilter {
	return &netlink.FwFilter{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: env.Link.Attrs().Index, Parent: env.Root, Handle: mark,
			Priority: prio, Protocol: unix.ETH_P_ALL},
		ClassId: classID, Mask: shaper.MarkMask,
	}
}

// list returns the fw filters at FwPrio by mark.
func (c *Fw) list(env Env) (map[uint32]*netlink.FwFilter, error) {
	fs, err := env.Handle.FilterList(env.Link, env.Root)
	if err != nil {
		return nil, fmt.Errorf("list filters: %w", err)
	}
	out := map[uint32]*netlink.FwFilter{}
	for _, f := range fs {
		fw, ok := f.(*netlink.FwFilter)
		if !ok || fw.Priority != FwPrio || fw.Handle == 0 {
			continue
		}
		out[fw.Handle] = fw
	}
	return out, nil
}

// Sync makes the fw filters match the table's marked entries.
func (c *Fw) Sync(ctx context.Context, env Env, table Table) (Result, error) {
	var res Result
	have, err := c.list(env)
	if err != nil {
		return res, err
	}
	want := markTable(table)
	// cls_fw keeps one mask for all filters of a priority and refuses a
	// filter with another: filters with the old full-width mask (the kernel
	// lists no mask for 0xffffffff) go all at once and are re-created.
	for _, f := range have {
		if f.Mask != shaper.MarkMask {
			if err := c.Remove(ctx, env); err != nil {
				return res, err
			}
			res.Writes += c.TakeWrites()
			res.Deleted += len(have)
			res.Notes = append(res.Notes, fmt.Sprintf("re-created the fw filters with mask %#x", shaper.MarkMask))
			have = map[uint32]*netlink.FwFilter{}
			break
		}
	}
	// Remove stale entries first: a class about to be deleted must lose its
	// filter before.
	for mark, f := range have {
		if _, ok := want[mark]; ok {
			continue
		}
		if err := env.Handle.FilterDel(f); err != nil {
			return res, fmt.Errorf("delete fw filter mark %#x: %w", mark, err)
		}
		res.Writes++
		res.Deleted++
	}
	for _, e := range table.Entries {
		if e.Mark == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		id := want[e.Mark]
		f, ok := have[e.Mark]
		if ok && f.ClassId == id {
			continue
		}
		nf := fwFilter(env, e.Mark, id, FwPrio)
		if err := env.Handle.FilterReplace(nf); err != nil {
			return res, fmt.Errorf("fw filter mark %#x -> class %s: %w", e.Mark, Handle(id), err)
		}
		res.Writes++
		if ok {
			res.Changed++
		} else {
			res.Added++
		}
	}
	return res, nil
}

// Bindings returns mark -> class for every fw filter at FwPrio.
func (c *Fw) Bindings(ctx context.Context, env Env) ([]Binding, error) {
	have, err := c.list(env)
	if err != nil {
		return nil, err
	}
	out := make([]Binding, 0, len(have))
	for mark, f := range have {
		_, min := netlink.MajorMinor(f.ClassId)
		out = append(out, Binding{Minor: min, Mark: mark})
	}
	return out, nil
}

// Remove deletes the fw filters (the whole FwPrio filter chain).
func (c *Fw) Remove(ctx context.Context, env Env) error {
	have, err := c.list(env)
	if err != nil || len(have) == 0 {
		return err
	}
	f := fwFilter(env, 0, 0, FwPrio)
	if err := env.Handle.FilterDel(f); err != nil {
		return fmt.Errorf("delete fw filters at prio %d: %w", FwPrio, err)
	}
	c.writes++
	return nil
}

// Probe adds and removes a fw filter to learn whether the kernel has cls_fw
// (the probe leaves nothing behind and is not counted as a change).
func (c *Fw) Probe(ctx context.Context, env Env) error {
	f := fwFilter(env, 0xfffffff0, env.Root|probeMinor, probePrio)
	if err := env.Handle.FilterAdd(f); err != nil {
		return err
	}
	g := fwFilter(env, 0, 0, probePrio)
	if err := env.Handle.FilterDel(g); err != nil {
		return fmt.Errorf("remove fw probe filter: %w", err)
	}
	return nil
}
