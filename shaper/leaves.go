package shaper

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"
)

// leafKind resolves the leaf kind to use: forced, else the tree's; auto
// becomes fq_codel if the kernel has it (tried on the default class's leaf
// once per Reconciler, or seen already in place), else fifo.
func (r *Reconciler) leafKind(link netlink.Link, desired *Tree, st rootState, res *Result) (LeafKind, error) {
	k := r.leaf
	if k == "" || k == LeafAuto {
		k = desired.Leaf.Kind
	}
	if k != "" && k != LeafAuto {
		return k, nil
	}
	if r.leafAuto != "" {
		return r.leafAuto, nil
	}
	defID := desired.ClassID(desired.DefaultMinor)
	if q, ok := st.byParent[defID]; ok && q.Type() == "fq_codel" {
		r.leafAuto = LeafFQCodel
		return r.leafAuto, nil
	}
	q := fqCodel(link, desired, desired.DefaultMinor)
	if err := r.do(func() error { return r.h.QdiscReplace(q) }); err != nil {
		r.leafAuto = LeafFIFO
		res.Notes = append(res.Notes, fmt.Sprintf("fq_codel not available in this kernel (%v): leaves use FIFO (HTB's built-in pfifo, limit = txqueuelen)", err))
		return r.leafAuto, nil
	}
	st.byParent[defID] = q
	res.Leaves = append(res.Leaves, desired.DefaultMinor)
	r.leafAuto = LeafFQCodel
	return r.leafAuto, nil
}

func fqCodel(link netlink.Link, t *Tree, minor uint16) *netlink.FqCodel {
	q := netlink.NewFqCodel(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Parent: t.ClassID(minor), Handle: netlink.MakeHandle(minor, 0)})
	q.Limit = t.Leaf.Limit
	q.Interval = t.Leaf.IntervalUs
	return q
}

// leafOK reports whether the actual leaf qdisc matches.
func leafOK(kind LeafKind, t *Tree, minor uint16, q netlink.Qdisc) bool {
	switch kind {
	case LeafFQCodel:
		fq, ok := q.(*netlink.FqCodel)
		if !ok || fq.Handle != netlink.MakeHandle(minor, 0) {
			return false
		}
		return (t.Leaf.Limit == 0 || fq.Limit == t.Leaf.Limit) && (t.Leaf.IntervalUs == 0 || nearUs(fq.Interval, t.Leaf.IntervalUs))
	default:
		return q == nil || q.Type() == "pfifo"
	}
}

// syncLeaves creates or replaces the leaf qdiscs of every leaf class and
// records what it wrote in st.byParent.
func (r *Reconciler) syncLeaves(ctx context.Context, link netlink.Link, desired *Tree, st rootState, res *Result) error {
	kind, err := r.leafKind(link, desired, st, res)
	if err != nil {
		return err
	}
	res.LeafKind = kind
	for _, c := range desired.Classes {
		if !c.IsLeaf() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		id := desired.ClassID(c.Minor)
		q := st.byParent[id]
		if leafOK(kind, desired, c.Minor, q) {
			continue
		}
		if kind == LeafFQCodel {
			nq := fqCodel(link, desired, c.Minor)
			if err := r.do(func() error { return r.h.QdiscReplace(nq) }); err != nil {
				return fmt.Errorf("dev %s: leaf fq_codel under class %s: %w", r.dev, desired.Handle(c.Minor), err)
			}
			st.byParent[id] = nq
		} else {
			// Deleting the leaf makes HTB graft its default pfifo.
			if err := r.do(func() error { return r.h.QdiscDel(q) }); err != nil {
				return fmt.Errorf("dev %s: remove leaf %s under class %s: %w", r.dev, q.Type(), desired.Handle(c.Minor), err)
			}
			delete(st.byParent, id)
		}
		res.Leaves = append(res.Leaves, c.Minor)
	}
	return nil
}

// nearUs compares microsecond values as fq_codel reports them: it keeps
// times in 1024 ns units, so 100000 us reads back as 99999.
func nearUs(got, want uint32) bool {
	d := int64(got) - int64(want)
	if d < 0 {
		d = -d
	}
	return d <= int64(want)/1000+1
}

// roundUs undoes fq_codel's 1024 ns rounding for whole milliseconds.
func roundUs(v uint32) uint32 {
	if r := (v + 500) / 1000 * 1000; r != 0 && nearUs(v, r) {
		return r
	}
	return v
}
