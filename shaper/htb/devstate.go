package htb

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// devState is the kernel side's one record of what a device holds, as one
// Reconcile works on it: read from the kernel (a full run) or remembered
// from the last successful run (an incremental run). Reconcile updates it
// as it writes, so after a successful run it is what the kernel holds, and
// in incremental mode the Reconciler keeps it (Reconciler.held) for the
// next run to diff against.
//
// It is not the plan. The Backend keeps that as a plan.State: the flows,
// their admission and each flow's class, in the model's units, which is
// what an Update plans from. A devState holds what only the kernel side
// needs: the device's qdiscs (root, size table, leaves), its classes in
// the kernel's units (bytes/s, ticks, rate-spec overheads, as the kernel
// reports them, so a diff has no rounding drift), and the classifier's
// entries; and, read from the kernel, it can hold classes no plan has
// (stale or someone else's, which the run deletes).
type devState struct {
	// ifindex is the device the state belongs to; a device recreated under
	// the same name has another index, so a remembered state is not used
	// for it.
	ifindex int
	// qdiscState is the owned root HTB qdisc (owned is always set), its
	// size table and the leaf qdiscs by parent class id.
	qdiscState
	// classes are the HTB classes under the root by minor, in the
	// kernel's units with their rate-spec overheads.
	classes plan.MinorTable[kernelClass]

	// Set when the state is remembered (after a successful run): tree is
	// the header of the desired tree made true (no classes), table the
	// classifier's entries and cls the classifier that holds them; link is
	// the device and leaf the leaf kind in use, so an incremental update
	// reads neither back. An Update's writes (writeDelta) keep classes and
	// qdiscs up to date but not table, which is why the Backend has the
	// Reconciler forget the state after Updates before its next Apply.
	tree  *plan.Tree
	table classify.Table
	cls   classify.Classifier
	link  netlink.Link
	leaf  plan.LeafKind
}

// qdiscState is the device's qdiscs as read from the kernel: its root
// qdisc (owned: gtpqos's HTB root) with the owned root's size table, and
// the other qdiscs (the leaves) by parent class id. A devState holds it for
// an owned root.
type qdiscState struct {
	root     netlink.Qdisc
	owned    bool
	byParent map[uint32]netlink.Qdisc
	// stab is the owned root's size table (nil: none).
	stab *sizeSpec
}

// readQdiscs reads the device's qdiscs, with the fifo leaves' limits and
// an owned root's size table, which vishvananda/netlink does not decode.
func (r *Reconciler) readQdiscs(link netlink.Link) (qdiscState, error) {
	qs, err := r.h.QdiscList(link)
	if err != nil {
		return qdiscState{}, fmt.Errorf("dev %s: list qdiscs: %w", r.dev, err)
	}
	st := qdiscState{byParent: make(map[uint32]netlink.Qdisc, len(qs))}
	for _, q := range qs {
		a := q.Attrs()
		if a.LinkIndex != link.Attrs().Index {
			continue
		}
		if a.Parent == netlink.HANDLE_ROOT {
			st.root = q
			continue
		}
		st.byParent[a.Parent] = q
	}
	if err := r.readFifoLimits(link, st.byParent); err != nil {
		return st, err
	}
	if h, ok := st.root.(*netlink.Htb); ok && h.Handle == rootHandle() {
		st.owned = true
		if st.stab, err = r.readStab(link); err != nil {
			return st, err
		}
	}
	return st, nil
}

// readStab reads the root qdisc's size table, which vishvananda/netlink
// does not decode.
func (r *Reconciler) readStab(link netlink.Link) (*sizeSpec, error) {
	c, err := r.tc(link)
	if err != nil {
		return nil, err
	}
	var ri rootInfo
	err = c.query(rootGetReq(link.Attrs().Index), unix.RTM_NEWQDISC, func(b []byte) (err error) {
		ri, err = parseRoot(b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dev %s: read root qdisc: %w", r.dev, err)
	}
	if ri.handle != rootHandle() || ri.kind != "htb" {
		return nil, fmt.Errorf("dev %s: root qdisc changed while reading it (now %s %x:)", r.dev, ri.kind, ri.handle>>16)
	}
	return ri.stab, nil
}

// usableFor reports whether a remembered state can stand in for the
// kernel's tree for desired: same device, same classifier, same leaf spec.
// Anything else (a config reload that switches classifier or leaf) takes a
// full run.
func (m *devState) usableFor(link netlink.Link, desired *plan.Tree, cls classify.Classifier) bool {
	return m != nil && m.tree != nil && m.ifindex == link.Attrs().Index && m.cls == cls &&
		m.tree.Leaf == desired.Leaf && m.tree.Major == desired.Major &&
		m.tree.Accounting == desired.Accounting && m.tree.Overhead == desired.Overhead
}

// written records a class the run created or changed, in the kernel's units
// as Reconcile wrote it (level 0: HTB reports a class without children as
// a leaf, and a class with children is never compared on quantum or prio).
func (m *devState) written(hc *netlink.HtbClass, over rateOverhead) {
	_, min := netlink.MajorMinor(hc.Handle)
	m.classes.Set(min, fromNetlink(hc, over))
}

// deleted records a class the run deleted (its leaf qdisc goes with it).
func (m *devState) deleted(t *plan.Tree, minor uint16) {
	m.classes.Del(minor)
	delete(m.byParent, t.ClassID(minor))
}

// treeHeader is t without its classes: what a remembered state needs of
// the tree made true (major, leaf spec); its classes are in the state's
// kernel form already, and a copy would cost a class list per device.
func treeHeader(t *plan.Tree) *plan.Tree {
	c := *t
	c.Classes = nil
	return &c
}

// readState reads the device's tree from the kernel, creating the root HTB
// (with its link and default classes) first where the device has none, and
// repairing an owned root's default class and size table.
func (r *Reconciler) readState(link netlink.Link, desired *plan.Tree, res *Result) (*devState, error) {
	st, err := r.readQdiscs(link)
	if err != nil {
		return nil, err
	}
	if st.owned {
		res.Adopted = true
		if st, err = r.fixRoot(link, desired, st, res); err != nil {
			return nil, err
		}
	} else {
		if st.root != nil && st.root.Attrs().Handle != 0 {
			if !r.opts.Force {
				return nil, r.foreignErr(st.root)
			}
			maj, _ := netlink.MajorMinor(st.root.Attrs().Handle)
			res.Notes = append(res.Notes, fmt.Sprintf("replaced foreign root qdisc %s %x: (--force)", st.root.Type(), maj))
		}
		if st, err = r.rebuild(link, desired, st, res); err != nil {
			return nil, err
		}
	}
	// Sized for the desired tree: a device in step holds its classes.
	classes, err := r.listClasses(link, plan.MaxMinor(desired))
	if err != nil {
		return nil, err
	}
	return &devState{ifindex: link.Attrs().Index, qdiscState: st, classes: classes}, nil
}

// fixRoot repairs an owned root qdisc. HTB has no change operation for its
// own options, so a root whose default names another class is rebuilt
// (its counters start again). The size table is changed in place (a qdisc
// change that carries only TCA_STAB, or nothing to remove it); only if the
// kernel refuses that is the root rebuilt.
func (r *Reconciler) fixRoot(link netlink.Link, desired *plan.Tree, st qdiscState, res *Result) (qdiscState, error) {
	root := st.root.(*netlink.Htb)
	if root.Defcls != uint32(desired.DefaultMinor) {
		res.Notes = append(res.Notes, fmt.Sprintf("root qdisc htb %x: sent unclassified packets to class %x:%x, not gtpqos's default %s, and HTB cannot change a root's default in place: rebuilt the tree (class counters start again)",
			plan.OwnedMajor, plan.OwnedMajor, root.Defcls, desired.Handle(desired.DefaultMinor)))
		return r.rebuild(link, desired, st, res)
	}
	want := stabFor(desired)
	if sameStab(want, st.stab) {
		return st, nil
	}
	c, err := r.tc(link)
	if err != nil {
		return st, err
	}
	if err := r.do(func() error { return c.do(rootStabReq(link.Attrs().Index, want)) }); err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the kernel refused to change the root qdisc's size table in place (%v): rebuilt the tree for %s accounting (class counters start again)", err, desired.Accounting))
		return r.rebuild(link, desired, st, res)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("accounting switched to %s in place: %s (class counters kept)", desired.Accounting, stabNote(desired)))
	st.stab = want
	return st, nil
}

// stabNote says what the root's size table does.
func stabNote(t *plan.Tree) string {
	if t.Accounting != shaper.AccountPacket {
		return "no size table, classes count whole frames"
	}
	return fmt.Sprintf("size table overhead -%d on the root, the link class adds %d back", t.Overhead, t.Overhead)
}

// rebuild creates the root HTB, replacing what the device has, and reads
// it back.
func (r *Reconciler) rebuild(link netlink.Link, desired *plan.Tree, st qdiscState, res *Result) (qdiscState, error) {
	var old uint32
	if st.root != nil && st.root.Attrs().Handle == rootHandle() {
		old = rootHandle() // the same handle: replacing it would only change it
	}
	if err := r.createRoot(link, desired, old); err != nil {
		return st, err
	}
	res.CreatedRoot, res.Adopted = true, false
	st, err := r.readQdiscs(link)
	if err != nil {
		return st, err
	}
	if !st.owned {
		return st, fmt.Errorf("dev %s: root qdisc htb %x: not found after creating it", r.dev, plan.OwnedMajor)
	}
	return st, nil
}

// createRoot sends, in one batch (one sendmsg: the kernel handles every
// message inside that one system call, so a kill cannot leave the root
// without its default class), the root HTB with its size table, the link
// class and the default class; with old set, the root qdisc with that
// handle is deleted first in the same batch. It then reads the ACKs; if any
// message failed, the root is deleted again, so no packet is left in HTB's
// unshaped direct queue.
func (r *Reconciler) createRoot(link netlink.Link, desired *plan.Tree, old uint32) error {
	c, err := r.tc(link)
	if err != nil {
		return err
	}
	idx := link.Attrs().Index
	var reqs []*nl.NetlinkRequest
	if old != 0 {
		reqs = append(reqs, rootDelReq(idx, old))
	}
	reqs = append(reqs, rootAddReq(idx, uint32(desired.DefaultMinor), stabFor(desired)))
	var what []string
	for _, m := range []uint16{plan.LinkMinor, desired.DefaultMinor} {
		cl, _ := desired.Find(m)
		req, err := classReq(unix.NLM_F_CREATE, r.htbClass(link, desired, cl), toKernel(desired, cl).over)
		if err != nil {
			return err
		}
		reqs = append(reqs, req)
		what = append(what, fmt.Sprintf("%s class %s", cl.Role, desired.Handle(m)))
	}
	what = append([]string{fmt.Sprintf("root qdisc htb %x:", plan.OwnedMajor)}, what...)
	if old != 0 {
		what = append([]string{fmt.Sprintf("delete root qdisc %x:", old>>16)}, what...)
	}
	errs, err := c.exec(reqs...)
	if err != nil {
		_ = c.do(rootDelReq(idx, rootHandle()))
		return fmt.Errorf("dev %s: create root qdisc htb %x: %w (root qdisc removed again)", r.dev, plan.OwnedMajor, err)
	}
	var failed error
	for i, e := range errs {
		if e == nil {
			r.writes++
		} else if failed == nil {
			failed = fmt.Errorf("%s: %w", what[i], e)
		}
	}
	if failed != nil {
		if r.do(func() error { return c.do(rootDelReq(idx, rootHandle())) }) == nil {
			return fmt.Errorf("dev %s: %w (root qdisc removed again)", r.dev, failed)
		}
		return fmt.Errorf("dev %s: %w", r.dev, failed)
	}
	return nil
}
