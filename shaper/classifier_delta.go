package shaper

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/cilium/ebpf"
)

// DeltaSyncer is implemented by classifiers that can move their entries
// from one desired tree to the next without reading the kernel back. A
// Reconciler in incremental mode (WithTrustLastWrite) uses it between full
// runs; a classifier without it gets a full Sync every time.
type DeltaSyncer interface {
	// SyncDelta changes the entries from what prev asked for to what
	// desired asks for, trusting that the kernel holds exactly prev's
	// entries. Stale entries are removed before new ones are added.
	SyncDelta(ctx context.Context, env ClassifierEnv, prev, desired *Tree) (ClassifierResult, error)
}

// markEntry is one mark -> class entry to write.
type markEntry struct {
	mark    uint32
	minor   uint16
	changed bool // the mark was bound to another class before
}

// flowMarks returns mark -> minor for t's flow classes with a mark.
func flowMarks(t *Tree) map[uint32]uint16 {
	out := make(map[uint32]uint16, len(t.Classes))
	for _, c := range t.Classes {
		if c.Role == RoleFlow && c.Mark != 0 {
			out[c.Mark] = c.Minor
		}
	}
	return out
}

// markDelta returns the marks to unbind and the entries to write to go from
// prev's mark bindings to desired's, each sorted by mark.
func markDelta(prev, desired *Tree) (del []uint32, put []markEntry) {
	have, want := flowMarks(prev), flowMarks(desired)
	for k := range have {
		if _, ok := want[k]; !ok {
			del = append(del, k)
		}
	}
	for k, v := range want {
		old, ok := have[k]
		if ok && old == v {
			continue
		}
		put = append(put, markEntry{mark: k, minor: v, changed: ok})
	}
	sort.Slice(del, func(i, j int) bool { return del[i] < del[j] })
	sort.Slice(put, func(i, j int) bool { return put[i].mark < put[j].mark })
	return del, put
}

func (e markEntry) count(res *ClassifierResult) {
	res.Writes++
	if e.changed {
		res.Changed++
	} else {
		res.Added++
	}
}

// SyncDelta deletes the fw filters of marks desired no longer has and
// replaces those of new or re-bound marks, without listing the filters.
func (c *FwClassifier) SyncDelta(ctx context.Context, env ClassifierEnv, prev, desired *Tree) (ClassifierResult, error) {
	var res ClassifierResult
	del, put := markDelta(prev, desired)
	for _, mark := range del {
		if err := env.Handle.FilterDel(fwFilter(env, mark, 0, FwPrio)); err != nil {
			return res, fmt.Errorf("delete fw filter mark %#x: %w", mark, err)
		}
		res.Writes++
		res.Deleted++
	}
	for _, e := range put {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := env.Handle.FilterReplace(fwFilter(env, e.mark, desired.ClassID(e.minor), FwPrio)); err != nil {
			return res, fmt.Errorf("fw filter mark %#x -> class %s: %w", e.mark, desired.Handle(e.minor), err)
		}
		e.count(&res)
	}
	return res, nil
}

// SyncDelta deletes and puts only the changed mark -> class entries of the
// map it loaded or adopted in an earlier Sync, without iterating the map or
// listing filters. Without such a map (nothing synced yet) it does a full
// Sync.
func (c *MarkBPFClassifier) SyncDelta(ctx context.Context, env ClassifierEnv, prev, desired *Tree) (ClassifierResult, error) {
	if c.m == nil {
		return c.Sync(ctx, env, desired)
	}
	var res ClassifierResult
	// A map entry is only a write if our program still reads the map: a
	// device moved to another netns and back, or a root deleted by hand,
	// keeps its ifindex but loses the filter. Fail then, so the Reconciler
	// forgets and the next run reads the kernel and rebuilds.
	if f := c.installedFilter(env); f == nil || f.Id != c.progID {
		return res, fmt.Errorf("dev %s: the gtpqos cls_bpf filter is gone or replaced: full resync needed", env.Link.Attrs().Name)
	}
	del, put := markDelta(prev, desired)
	for _, k := range del {
		if err := c.m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return res, fmt.Errorf("delete mark %#x from BPF map: %w", k, err)
		}
		res.Writes++
		res.Deleted++
	}
	for _, e := range put {
		if err := c.m.Put(e.mark, uint32(e.minor)); err != nil {
			return res, fmt.Errorf("map mark %#x -> class %s in BPF map: %w", e.mark, desired.Handle(e.minor), err)
		}
		e.count(&res)
	}
	return res, nil
}
