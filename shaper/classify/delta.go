package classify

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/cilium/ebpf"
)

// markEntry is one mark -> class entry to write.
type markEntry struct {
	mark    uint32
	classID uint32
	changed bool // the mark was bound to another class before
}

// markDelta returns the marks to unbind and the entries to write to go from
// one table's mark bindings to the next's, each sorted by mark.
func markDelta(from, to Table) (del []uint32, put []markEntry) {
	have, want := markTable(from), markTable(to)
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
		put = append(put, markEntry{mark: k, classID: v, changed: ok})
	}
	sort.Slice(del, func(i, j int) bool { return del[i] < del[j] })
	sort.Slice(put, func(i, j int) bool { return put[i].mark < put[j].mark })
	return del, put
}

func (e markEntry) count(res *Result) {
	res.Writes++
	if e.changed {
		res.Changed++
	} else {
		res.Added++
	}
}

// SyncDelta deletes the fw filters of marks the new table no longer has and
// replaces those of new or re-bound marks, without listing the filters.
func (c *Fw) SyncDelta(ctx context.Context, env Env, from, to Table) (Result, error) {
	var res Result
	del, put := markDelta(from, to)
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
		if err := env.Handle.FilterReplace(fwFilter(env, e.mark, e.classID, FwPrio)); err != nil {
			return res, fmt.Errorf("fw filter mark %#x -> class %s: %w", e.mark, Handle(e.classID), err)
		}
		e.count(&res)
	}
	return res, nil
}

// SyncDelta deletes and puts only the changed mark -> class entries of the
// map it loaded or adopted in an earlier Sync, without iterating the map or
// listing filters. Without such a map (nothing synced yet) it does a full
// Sync.
func (c *MarkBPF) SyncDelta(ctx context.Context, env Env, from, to Table) (Result, error) {
	if c.m == nil {
		return c.Sync(ctx, env, to)
	}
	var res Result
	// A map entry is only a write if our program still reads the map: a
	// device moved to another netns and back, or a root deleted by hand,
	// keeps its ifindex but loses the filter. Fail then, so the Reconciler
	// forgets and the next run reads the kernel and rebuilds.
	if f := c.installedFilter(env); f == nil || f.Id != c.progID {
		return res, fmt.Errorf("dev %s: the gtpqos cls_bpf filter is gone or replaced: full resync needed", env.Link.Attrs().Name)
	}
	del, put := markDelta(from, to)
	for _, k := range del {
		if err := c.m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return res, fmt.Errorf("delete mark %#x from BPF map: %w", k, err)
		}
		res.Writes++
		res.Deleted++
	}
	for _, e := range put {
		if err := c.m.Put(e.mark, e.classID&0xffff); err != nil {
			return res, fmt.Errorf("map mark %#x -> class %s in BPF map: %w", e.mark, Handle(e.classID), err)
		}
		e.count(&res)
	}
	return res, nil
}

// Patch deletes the fw filters of del's marks and replaces those of put's.
func (c *Fw) Patch(ctx context.Context, env Env, del, put []Entry) (Result, error) {
	var res Result
	for _, e := range del {
		if e.Mark == 0 {
			continue
		}
		if err := env.Handle.FilterDel(fwFilter(env, e.Mark, 0, FwPrio)); err != nil {
			return res, fmt.Errorf("delete fw filter mark %#x: %w", e.Mark, err)
		}
		res.Writes++
		res.Deleted++
	}
	for _, e := range put {
		if e.Mark == 0 {
			continue
		}
		if err := env.Handle.FilterReplace(fwFilter(env, e.Mark, e.ClassID, FwPrio)); err != nil {
			return res, fmt.Errorf("fw filter mark %#x -> class %s: %w", e.Mark, Handle(e.ClassID), err)
		}
		res.Writes++
		res.Added++
	}
	return res, nil
}

// Patch deletes del's marks from the map it loaded or adopted and puts
// put's. Without such a map (nothing synced yet) it fails: the backend then
// runs a full Sync.
func (c *MarkBPF) Patch(ctx context.Context, env Env, del, put []Entry) (Result, error) {
	var res Result
	if c.m == nil {
		return res, fmt.Errorf("dev %s: the cls_bpf mark classifier is not loaded: full sync needed", env.Link.Attrs().Name)
	}
	for _, e := range del {
		if e.Mark == 0 {
			continue
		}
		if err := c.m.Delete(e.Mark); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return res, fmt.Errorf("delete mark %#x from BPF map: %w", e.Mark, err)
		}
		res.Writes++
		res.Deleted++
	}
	for _, e := range put {
		if e.Mark == 0 {
			continue
		}
		if err := c.m.Put(e.Mark, e.ClassID&0xffff); err != nil {
			return res, fmt.Errorf("map mark %#x -> class %s in BPF map: %w", e.Mark, Handle(e.ClassID), err)
		}
		res.Writes++
		res.Added++
	}
	return res, nil
}
