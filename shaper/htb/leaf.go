package htb

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// leaf is one kind of qdisc under the leaf classes (flows and default).
// A new kind is one more implementation and one more entry in leaves.
type leaf interface {
	// want returns the qdisc to install under class c, or nil for HTB's
	// built-in pfifo (nothing to create).
	want(link netlink.Link, t *plan.Tree, c plan.Class) netlink.Qdisc
	// matches reports whether q (nil: none, HTB's built-in pfifo) is the
	// leaf t asks for under class c on link, with every parameter the
	// kernel reports: a qdisc of the right kind with other parameters is
	// drift too (everything under the root is gtpqos's).
	matches(link netlink.Link, t *plan.Tree, c plan.Class, q netlink.Qdisc) bool
	// inPlace reports whether replacing q with want's qdisc repairs it; if
	// not (a parameter the kernel cannot change, or netlink cannot send),
	// q is deleted first.
	inPlace(t *plan.Tree, c plan.Class, q netlink.Qdisc) bool
	// read returns the leaf spec a qdisc read from the kernel stands for,
	// or false if q is not of this kind.
	read(q netlink.Qdisc) (plan.LeafSpec, bool)
}

// leaves are the leaf kinds the HTB backend can install.
var leaves = map[plan.LeafKind]leaf{plan.LeafFQCodel: fqCodelLeaf{}, plan.LeafFIFO: fifoLeaf{}}

// fqCodelLeaf is fq_codel with the spec's limit and interval (its target is
// the kernel default, 5 ms: vishvananda/netlink does not send one).
type fqCodelLeaf struct{}

// fq_codel's defaults for what the policy does not set (kernel
// net/sched/sch_fq_codel.c): gtpqos sends the ones netlink can, and
// compares every one it reads back.
const (
	fqCodelFlows       = 1024
	fqCodelDropBatch   = 64
	fqCodelMemoryLimit = 32 << 20
	fqCodelTargetUs    = 5000
)

func (fqCodelLeaf) want(link netlink.Link, t *plan.Tree, c plan.Class) netlink.Qdisc {
	q := netlink.NewFqCodel(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Parent: t.ClassID(c.Minor), Handle: netlink.MakeHandle(c.Minor, 0)})
	q.Limit = t.Leaf.Limit
	q.Interval = t.Leaf.IntervalUs
	q.DropBatchSize, q.MemoryLimit = fqCodelDropBatch, fqCodelMemoryLimit
	q.Quantum = fqCodelQuantum(link)
	return q
}

// fqCodelQuantum is fq_codel's default quantum on link, the device's MTU
// plus its link-layer header, where the header is known (0: not compared,
// the kernel's default is kept).
func fqCodelQuantum(link netlink.Link) uint32 {
	a := link.Attrs()
	if a.EncapType == "ether" || a.EncapType == "loopback" {
		return uint32(a.MTU) + 14
	}
	return 0
}

func (l fqCodelLeaf) matches(link netlink.Link, t *plan.Tree, c plan.Class, q netlink.Qdisc) bool {
	fq, ok := q.(*netlink.FqCodel)
	if !ok || fq.Handle != netlink.MakeHandle(c.Minor, 0) || !l.inPlace(t, c, q) {
		return false
	}
	quantum := fqCodelQuantum(link)
	return (t.Leaf.Limit == 0 || fq.Limit == t.Leaf.Limit) && (t.Leaf.IntervalUs == 0 || nearUs(fq.Interval, t.Leaf.IntervalUs)) &&
		fq.ECN == 1 && fq.DropBatchSize == fqCodelDropBatch && fq.MemoryLimit == fqCodelMemoryLimit &&
		(quantum == 0 || fq.Quantum == quantum)
}

// inPlace: the kernel cannot change an fq_codel's flows, and netlink
// sends neither its target nor a zero ce_threshold: such a qdisc of ours
// is deleted and created again.
func (fqCodelLeaf) inPlace(t *plan.Tree, c plan.Class, q netlink.Qdisc) bool {
	fq, ok := q.(*netlink.FqCodel)
	if !ok || fq.Handle != netlink.MakeHandle(c.Minor, 0) {
		return true // another kind or handle: replaced by a new qdisc
	}
	target := t.Leaf.TargetUs
	if target == 0 {
		target = fqCodelTargetUs
	}
	return fq.Flows == fqCodelFlows && fq.CEThreshold == 0 && nearUs(fq.Target, target)
}

func (fqCodelLeaf) read(q netlink.Qdisc) (plan.LeafSpec, bool) {
	fq, ok := q.(*netlink.FqCodel)
	if !ok {
		return plan.LeafSpec{}, false
	}
	return plan.LeafSpec{Kind: plan.LeafFQCodel, Limit: fq.Limit, TargetUs: roundUs(fq.Target), IntervalUs: roundUs(fq.Interval)}, true
}

// leafKind resolves the leaf kind to use: forced, else the tree's; auto
// becomes fq_codel if the kernel has it (tried on the default class's leaf
// once per Reconciler, or seen already in place), else fifo.
func (r *Reconciler) leafKind(link netlink.Link, desired *plan.Tree, st qdiscState, res *Result) plan.LeafKind {
	k := r.opts.Leaf
	if k == "" || k == plan.LeafAuto {
		k = desired.Leaf.Kind
	}
	if k != "" && k != plan.LeafAuto {
		return k
	}
	if r.leafAuto != "" {
		return r.leafAuto
	}
	defID := desired.ClassID(desired.DefaultMinor)
	fq := leaves[plan.LeafFQCodel]
	if _, ok := fq.read(st.byParent[defID]); ok {
		r.leafAuto = plan.LeafFQCodel
		return r.leafAuto
	}
	dc, _ := desired.Find(desired.DefaultMinor)
	q := fq.want(link, desired, dc)
	// A kernel known to lack fq_codel is not asked again on this device.
	err := probedFeatures().fqCodel
	if err == nil {
		err = r.do(func() error { return r.h.QdiscReplace(q) })
	}
	if err != nil {
		r.leafAuto = plan.LeafFIFO
		res.Notes = append(res.Notes, fmt.Sprintf("fq_codel not available in this kernel (%v): leaves use FIFO (bfifo, limit = ceil × delay budget)", err))
		return r.leafAuto
	}
	st.byParent[defID] = asKernel(desired, q)
	res.Leaves = append(res.Leaves, desired.DefaultMinor)
	r.leafAuto = plan.LeafFQCodel
	return r.leafAuto
}

// syncLeaves creates or replaces the leaf qdiscs of every leaf class and
// records what it wrote in st.byParent.
func (r *Reconciler) syncLeaves(ctx context.Context, link netlink.Link, desired *plan.Tree, st qdiscState, res *Result) error {
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
		if lf.matches(link, desired, c, cur) {
			continue
		}
		nq := lf.want(link, desired, c)
		if cur != nil && nq != nil && (!lf.inPlace(desired, c, cur) || sameHandleOtherKind(cur, nq)) {
			if err := r.do(func() error { return r.h.QdiscDel(cur) }); err != nil {
				return fmt.Errorf("dev %s: remove leaf %s under class %s: %w", r.dev, cur.Type(), desired.Handle(c.Minor), err)
			}
			delete(st.byParent, id)
		}
		if nq != nil {
			if err := r.do(func() error { return r.replaceLeaf(link, nq) }); err != nil {
				return fmt.Errorf("dev %s: leaf %s under class %s: %w", r.dev, kind, desired.Handle(c.Minor), err)
			}
			st.byParent[id] = asKernel(desired, nq)
		} else if cur != nil {
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

// sameHandleOtherKind reports whether new would take cur's handle with
// another kind: the kernel refuses that replace ("Invalid qdisc name"), so
// cur goes first (an fq_codel leaf becoming a bfifo, or back).
func sameHandleOtherKind(cur, new netlink.Qdisc) bool {
	return cur.Attrs().Handle == new.Attrs().Handle && cur.Type() != new.Type()
}

// asKernel returns the qdisc q as the kernel reports it once written:
// the parameters netlink does not send hold the kernel's defaults, so a
// leaf remembered after a write (incremental mode) compares equal to the
// same leaf read back.
func asKernel(t *plan.Tree, q netlink.Qdisc) netlink.Qdisc {
	fq, ok := q.(*netlink.FqCodel)
	if !ok {
		return q
	}
	c := *fq
	if c.Target == 0 {
		c.Target = t.Leaf.TargetUs
		if c.Target == 0 {
			c.Target = fqCodelTargetUs
		}
	}
	if c.Flows == 0 {
		c.Flows = fqCodelFlows
	}
	return &c
}

// readLeaf returns the leaf spec of the qdisc q found under a leaf class
// (FIFO when none of the known kinds matches).
func readLeaf(q netlink.Qdisc) plan.LeafSpec {
	for _, k := range []plan.LeafKind{plan.LeafFQCodel, plan.LeafFIFO} {
		if spec, ok := leaves[k].read(q); ok {
			return spec
		}
	}
	return plan.LeafSpec{Kind: plan.LeafFIFO}
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
