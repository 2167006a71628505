package shaper

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Filter priorities gtpqos uses on its root qdisc.
const (
	// FwPrio is the priority of the fw filters (all flows in one priority,
	// so cls_fw hashes marks: the cost does not grow with the flow count).
	FwPrio uint16 = 10
	// BPFPrio is the priority of the cls_bpf mark classifier.
	BPFPrio uint16 = 20
	// probePrio is where the fw probe filter briefly lives.
	probePrio uint16 = 0xfff0
)

// FwClassifier classifies by skb->mark with cls_fw: one fw filter per flow
// (handle = mark, flowid = the flow's class), all at FwPrio, as the seed
// experiment did by hand, with mask MarkMask (cls_fw matches mark & mask, so
// bits 24-31 do not matter). Flows without a mark are skipped.
type FwClassifier struct{ writes int }

// NewFwClassifier returns the fw classifier.
func NewFwClassifier() *FwClassifier { return &FwClassifier{} }

// Kind returns KindFw.
func (c *FwClassifier) Kind() ClassifierKind { return KindFw }

func (c *FwClassifier) takeWrites() int { n := c.writes; c.writes = 0; return n }

func fwFilter(env ClassifierEnv, mark, classID uint32, prio uint16) *netlink.FwFilter {
	return &netlink.FwFilter{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: env.Link.Attrs().Index, Parent: env.Root, Handle: mark,
			Priority: prio, Protocol: unix.ETH_P_ALL},
		ClassId: classID, Mask: MarkMask,
	}
}

// list returns the fw filters at FwPrio by mark.
func (c *FwClassifier) list(env ClassifierEnv) (map[uint32]*netlink.FwFilter, error) {
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

// Sync makes the fw filters match desired's flow classes.
func (c *FwClassifier) Sync(ctx context.Context, env ClassifierEnv, desired *Tree) (ClassifierResult, error) {
	var res ClassifierResult
	have, err := c.list(env)
	if err != nil {
		return res, err
	}
	want := map[uint32]uint32{}
	for _, cl := range desired.Classes {
		if cl.Role == RoleFlow && cl.Mark != 0 {
			want[cl.Mark] = desired.ClassID(cl.Minor)
		}
	}
	// cls_fw keeps one mask for all filters of a priority and refuses a
	// filter with another: filters with the old full-width mask (the kernel
	// lists no mask for 0xffffffff) go all at once and are re-created.
	for _, f := range have {
		if f.Mask != MarkMask {
			if err := c.Remove(ctx, env); err != nil {
				return res, err
			}
			res.Writes += c.takeWrites()
			res.Deleted += len(have)
			res.Notes = append(res.Notes, fmt.Sprintf("re-created the fw filters with mask %#x", MarkMask))
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
	for _, cl := range desired.Classes {
		if cl.Role != RoleFlow || cl.Mark == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		id := want[cl.Mark]
		f, ok := have[cl.Mark]
		if ok && f.ClassId == id {
			continue
		}
		nf := fwFilter(env, cl.Mark, id, FwPrio)
		if err := env.Handle.FilterReplace(nf); err != nil {
			return res, fmt.Errorf("fw filter mark %#x -> class %s: %w", cl.Mark, desired.Handle(cl.Minor), err)
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
func (c *FwClassifier) Bindings(ctx context.Context, env ClassifierEnv) ([]Binding, error) {
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
func (c *FwClassifier) Remove(ctx context.Context, env ClassifierEnv) error {
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
func (c *FwClassifier) Probe(ctx context.Context, env ClassifierEnv) error {
	f := fwFilter(env, 0xfffffff0, env.Root|uint32(DefaultMinor), probePrio)
	if err := env.Handle.FilterAdd(f); err != nil {
		return err
	}
	g := fwFilter(env, 0, 0, probePrio)
	if err := env.Handle.FilterDel(g); err != nil {
		return fmt.Errorf("remove fw probe filter: %w", err)
	}
	return nil
}
