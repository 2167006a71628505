package htb

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
)

// leaf is one kind of qdisc under the leaf classes (flows and default).
// A new kind is one more implementation and one more entry in leaves.
type leaf interface {
	// want returns the qdisc to install under class minor, or nil for
	// HTB's built-in pfifo (nothing to create).
	want(link netlink.Link, t *Tree, minor uint16) netlink.Qdisc
	// matches reports whether q (nil: none, HTB's built-in pfifo) is the
	// leaf t asks for under class minor.
	matches(t *Tree, minor uint16, q netlink.Qdisc) bool
	// read returns the leaf spec a qdisc read from the kernel stands for,
	// or false if q is not of this kind.
	read(q netlink.Qdisc) (shaper.LeafSpec, bool)
	// render is the tc command that creates it ("" for none).
	render(dev string, t *Tree, minor uint16) string
}

// leaves are the leaf kinds the HTB backend can install.
var leaves = map[shaper.LeafKind]leaf{shaper.LeafFQCodel: fqCodelLeaf{}, shaper.LeafFIFO: fifoLeaf{}}

// fqCodelLeaf is fq_codel with the spec's limit and interval (its target is
// the kernel default, 5 ms: vishvananda/netlink does not send one).
type fqCodelLeaf struct{}

func (fqCodelLeaf) want(link netlink.Link, t *Tree, minor uint16) netlink.Qdisc {
	q := netlink.NewFqCodel(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Parent: t.ClassID(minor), Handle: netlink.MakeHandle(minor, 0)})
	q.Limit = t.Leaf.Limit
	q.Interval = t.Leaf.IntervalUs
	return q
}

func (fqCodelLeaf) matches(t *Tree, minor uint16, q netlink.Qdisc) bool {
	fq, ok := q.(*netlink.FqCodel)
	if !ok || fq.Handle != netlink.MakeHandle(minor, 0) {
		return false
	}
	return (t.Leaf.Limit == 0 || fq.Limit == t.Leaf.Limit) && (t.Leaf.IntervalUs == 0 || nearUs(fq.Interval, t.Leaf.IntervalUs))
}

func (fqCodelLeaf) read(q netlink.Qdisc) (shaper.LeafSpec, bool) {
	fq, ok := q.(*netlink.FqCodel)
	if !ok {
		return shaper.LeafSpec{}, false
	}
	return shaper.LeafSpec{Kind: shaper.LeafFQCodel, Limit: fq.Limit, TargetUs: roundUs(fq.Target), IntervalUs: roundUs(fq.Interval)}, true
}

func (fqCodelLeaf) render(dev string, t *Tree, minor uint16) string {
	target := t.Leaf.TargetUs
	if target == 0 {
		target = 5000
	}
	return fmt.Sprintf("tc qdisc replace dev %s parent %s handle %x: fq_codel limit %d target %s interval %s",
		dev, t.Handle(minor), minor, t.Leaf.Limit, fmtUs(target), fmtUs(t.Leaf.IntervalUs))
}

// fifoLeaf is HTB's built-in leaf: a pfifo whose limit is the device's
// txqueuelen. gtpqos creates nothing for it.
type fifoLeaf struct{}

func (fifoLeaf) want(netlink.Link, *Tree, uint16) netlink.Qdisc { return nil }

func (fifoLeaf) matches(_ *Tree, _ uint16, q netlink.Qdisc) bool {
	return q == nil || q.Type() == "pfifo"
}

func (fifoLeaf) read(q netlink.Qdisc) (shaper.LeafSpec, bool) {
	return shaper.LeafSpec{Kind: shaper.LeafFIFO}, q == nil || q.Type() == "pfifo"
}

func (fifoLeaf) render(string, *Tree, uint16) string { return "" }

// leafKind resolves the leaf kind to use: forced, else the tree's; auto
// becomes fq_codel if the kernel has it (tried on the default class's leaf
// once per Reconciler, or seen already in place), else fifo.
func (r *Reconciler) leafKind(link netlink.Link, desired *Tree, st rootState, res *Result) shaper.LeafKind {
	k := r.leaf
	if k == "" || k == shaper.LeafAuto {
		k = desired.Leaf.Kind
	}
	if k != "" && k != shaper.LeafAuto {
		return k
	}
	if r.leafAuto != "" {
		return r.leafAuto
	}
	defID := desired.ClassID(desired.DefaultMinor)
	fq := leaves[shaper.LeafFQCodel]
	if _, ok := fq.read(st.byParent[defID]); ok {
		r.leafAuto = shaper.LeafFQCodel
		return r.leafAuto
	}
	q := fq.want(link, desired, desired.DefaultMinor)
	// A kernel known to lack fq_codel is not asked again on this device.
	err := probedFeatures().fqCodel
	if err == nil {
		err = r.do(func() error { return r.h.QdiscReplace(q) })
	}
	if err != nil {
		r.leafAuto = shaper.LeafFIFO
		res.Notes = append(res.Notes, fmt.Sprintf("fq_codel not available in this kernel (%v): leaves use FIFO (HTB's built-in pfifo, limit = txqueuelen)", err))
		return r.leafAuto
	}
	st.byParent[defID] = q
	res.Leaves = append(res.Leaves, desired.DefaultMinor)
	r.leafAuto = shaper.LeafFQCodel
	return r.leafAuto
}

// syncLeaves creates or replaces the leaf qdiscs of every leaf class and
// records what it wrote in st.byParent.
func (r *Reconciler) syncLeaves(ctx context.Context, link netlink.Link, desired *Tree, st rootState, res *Result) error {
	kind := r.leafKind(link, desired, st, res)
	lf, ok := leaves[kind]
	if !ok {
		return fmt.Errorf("dev %s: unknown leaf qdisc %q (want fq_codel or fifo)", r.dev, kind)
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
		cur := st.byParent[id]
		if lf.matches(desired, c.Minor, cur) {
			continue
		}
		if nq := lf.want(link, desired, c.Minor); nq != nil {
			if err := r.do(func() error { return r.h.QdiscReplace(nq) }); err != nil {
				return fmt.Errorf("dev %s: leaf %s under class %s: %w", r.dev, kind, desired.Handle(c.Minor), err)
			}
			st.byParent[id] = nq
		} else {
			// Deleting the leaf makes HTB graft its default pfifo.
			if err := r.do(func() error { return r.h.QdiscDel(cur) }); err != nil {
				return fmt.Errorf("dev %s: remove leaf %s under class %s: %w", r.dev, cur.Type(), desired.Handle(c.Minor), err)
			}
			delete(st.byParent, id)
		}
		res.Leaves = append(res.Leaves, c.Minor)
	}
	return nil
}

// readLeaf returns the leaf spec of the qdisc q found under a leaf class
// (FIFO when none of the known kinds matches).
func readLeaf(q netlink.Qdisc) shaper.LeafSpec {
	for _, k := range []shaper.LeafKind{shaper.LeafFQCodel, shaper.LeafFIFO} {
		if spec, ok := leaves[k].read(q); ok {
			return spec
		}
	}
	return shaper.LeafSpec{Kind: shaper.LeafFIFO}
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
