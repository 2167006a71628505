package shaper

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/vishvananda/netlink"
)

// do runs one kernel write and counts it when it succeeds.
func (r *Reconciler) do(f func() error) error {
	if err := f(); err != nil {
		return err
	}
	r.writes++
	return nil
}

func (r *Reconciler) link() (netlink.Link, error) {
	if r.dev == "" {
		return nil, errors.New("no device given")
	}
	l, err := r.h.LinkByName(r.dev)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", r.dev, err)
	}
	return l, nil
}

// rootHandle is the owned root qdisc's handle.
func rootHandle() uint32 { return netlink.MakeHandle(OwnedMajor, 0) }

// rootState finds the device's root qdisc and the qdiscs by parent.
type rootState struct {
	root     netlink.Qdisc
	owned    bool
	byParent map[uint32]netlink.Qdisc
}

func (r *Reconciler) readRoot(link netlink.Link) (rootState, error) {
	qs, err := r.h.QdiscList(link)
	if err != nil {
		return rootState{}, fmt.Errorf("dev %s: list qdiscs: %w", r.dev, err)
	}
	st := rootState{byParent: make(map[uint32]netlink.Qdisc, len(qs))}
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
	if h, ok := st.root.(*netlink.Htb); ok && h.Handle == rootHandle() {
		st.owned = true
	}
	return st, nil
}

// foreignErr describes a root qdisc gtpqos does not own.
func (r *Reconciler) foreignErr(q netlink.Qdisc) error {
	maj, _ := netlink.MajorMinor(q.Attrs().Handle)
	return fmt.Errorf("dev %s: root qdisc %s %x: %w (gtpqos's root is htb %x:); use --force to replace it",
		r.dev, q.Type(), maj, ErrNotOwned, OwnedMajor)
}

// kernelClass is a class in the kernel's units.
type kernelClass struct {
	rate, ceil      uint64 // bytes/s
	buffer, cbuffer uint32 // ticks
	quantum, prio   uint32
	parent          uint32
	level           uint32
	inner           bool
}

// parentID is the full id of c's parent (the root qdisc's for top-level
// classes), as toKernel gives it.
func parentID(t *Tree, c *Class) uint32 {
	if c.Parent == 0 {
		return rootHandle()
	}
	return t.ClassID(c.Parent)
}

func toKernel(t *Tree, c Class) kernelClass {
	k := kernelClass{rate: c.Rate / 8, ceil: c.Ceil / 8, quantum: c.Quantum, prio: c.Prio, inner: !c.IsLeaf()}
	k.buffer = netlink.Xmittime(k.rate, c.Burst)
	k.cbuffer = netlink.Xmittime(k.ceil, c.CBurst)
	k.parent = t.ClassID(c.Parent)
	if c.Parent == 0 {
		k.parent = rootHandle()
	}
	return k
}

func fromNetlink(h *netlink.HtbClass) kernelClass {
	return kernelClass{rate: h.Rate, ceil: h.Ceil, buffer: h.Buffer, cbuffer: h.Cbuffer, quantum: h.Quantum,
		prio: h.Prio, parent: h.Parent, level: h.Level}
}

// sameParent compares parents; HTB reports a top-level class's parent as
// TC_H_ROOT.
func sameParent(d, a uint32) bool {
	if a == netlink.HANDLE_ROOT {
		a = rootHandle()
	}
	return d == a
}

// same compares desired and actual. HTB sets quantum and prio only on leaf
// classes, so they are ignored for inner classes.
func same(d, a kernelClass) bool {
	if d.rate != a.rate || d.ceil != a.ceil || d.buffer != a.buffer || d.cbuffer != a.cbuffer {
		return false
	}
	if !d.inner && a.level == 0 && (d.quantum != a.quantum || d.prio != a.prio) {
		return false
	}
	return true
}

func (r *Reconciler) htbClass(link netlink.Link, t *Tree, c Class) *netlink.HtbClass {
	k := toKernel(t, c)
	hc := &netlink.HtbClass{
		ClassAttrs: netlink.ClassAttrs{LinkIndex: link.Attrs().Index, Handle: t.ClassID(c.Minor), Parent: k.parent},
		Rate:       k.rate, Ceil: k.ceil, Buffer: k.buffer, Cbuffer: k.cbuffer, Quantum: c.Quantum, Prio: c.Prio,
	}
	return hc
}

// listClasses returns the owned root's HTB classes by minor.
func (r *Reconciler) listClasses(link netlink.Link) (map[uint16]*netlink.HtbClass, error) {
	r.reads++
	cls, err := r.h.ClassList(link, rootHandle())
	if err != nil {
		return nil, fmt.Errorf("dev %s: list classes: %w", r.dev, err)
	}
	out := make(map[uint16]*netlink.HtbClass, len(cls))
	for _, c := range cls {
		hc, ok := c.(*netlink.HtbClass)
		if !ok {
			continue
		}
		maj, min := netlink.MajorMinor(hc.Handle)
		if maj != OwnedMajor || hc.LinkIndex != link.Attrs().Index {
			continue
		}
		out[min] = hc
	}
	return out, nil
}

// createRoot creates the root HTB, link and default classes on a device
// without a gtpqos tree. If a class fails, the root is deleted again so no
// packet sits in HTB's direct queue.
func (r *Reconciler) createRoot(link netlink.Link, desired *Tree) error {
	q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: rootHandle(), Parent: netlink.HANDLE_ROOT})
	q.Defcls = uint32(desired.DefaultMinor)
	if err := r.do(func() error { return r.h.QdiscReplace(q) }); err != nil {
		return fmt.Errorf("dev %s: create root qdisc htb %x: %w", r.dev, OwnedMajor, err)
	}
	for _, m := range []uint16{LinkMinor, desired.DefaultMinor} {
		c, ok := desired.Find(m)
		if !ok {
			continue
		}
		if err := r.do(func() error { return r.h.ClassReplace(r.htbClass(link, desired, c)) }); err != nil {
			_ = r.h.QdiscDel(q)
			return fmt.Errorf("dev %s: create %s class %s: %w (root qdisc removed again)", r.dev, c.Role, desired.Handle(m), err)
		}
	}
	return nil
}

func checkDesired(t *Tree) error {
	if t == nil {
		return errors.New("no desired tree (plan failed)")
	}
	if t.Major != OwnedMajor {
		return fmt.Errorf("desired tree has root major %x, want %x", t.Major, OwnedMajor)
	}
	l, ok1 := t.Find(LinkMinor)
	d, ok2 := t.Find(t.DefaultMinor)
	if !ok1 || !ok2 || l.Role != RoleLink || d.Role != RoleDefault {
		return errors.New("desired tree lacks its link or default class")
	}
	return nil
}

// depth returns a class's depth below the root in the given parent map.
func depth(minor uint16, parent map[uint16]uint16) int {
	d := 0
	for m := minor; d < 16; d++ {
		p, ok := parent[m]
		if !ok || p == 0 {
			break
		}
		m = p
	}
	return d
}

// readView reads the device's tree from the kernel, creating the root HTB
// (with its link and default classes) first where the device has none.
func (r *Reconciler) readView(link netlink.Link, desired *Tree, res *Result) (*view, error) {
	st, err := r.readRoot(link)
	if err != nil {
		return nil, err
	}
	if !st.owned {
		if st.root != nil && st.root.Attrs().Handle != 0 {
			if !r.force {
				return nil, r.foreignErr(st.root)
			}
			maj, _ := netlink.MajorMinor(st.root.Attrs().Handle)
			res.Notes = append(res.Notes, fmt.Sprintf("replaced foreign root qdisc %s %x: (--force)", st.root.Type(), maj))
		}
		if err := r.createRoot(link, desired); err != nil {
			return nil, err
		}
		res.CreatedRoot = true
		if st, err = r.readRoot(link); err != nil {
			return nil, err
		}
		if !st.owned {
			return nil, fmt.Errorf("dev %s: root qdisc htb %x: not found after creating it", r.dev, OwnedMajor)
		}
	} else {
		res.Adopted = true
	}
	classes, err := r.listClasses(link)
	if err != nil {
		return nil, err
	}
	return &view{ifindex: link.Attrs().Index, root: st.root.(*netlink.Htb), byParent: st.byParent, classes: classes}, nil
}

func (r *Reconciler) reconcile(ctx context.Context, desired *Tree) (Result, error) {
	start := r.writes
	res := Result{Dev: r.dev}
	// The memory is dropped now and kept again only if this run succeeds:
	// after any error the next run reads the kernel.
	mem := r.mem
	r.mem = nil
	fail := func(err error) (Result, error) {
		res.Writes = r.writes - start
		return res, err
	}
	if err := checkDesired(desired); err != nil {
		return fail(fmt.Errorf("dev %s: %w", r.dev, err))
	}
	// An unusable classifier must fail before the root is created.
	if err := r.checkKind(desired); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	link, err := r.link()
	if err != nil {
		return fail(err)
	}
	env := ClassifierEnv{Handle: r.h, Link: link, Root: rootHandle()}

	var v *view
	var cls Classifier
	if r.trust && mem != nil {
		c, err := r.classifier(ctx, env, desired, &res)
		if err != nil {
			return fail(err)
		}
		if mem.memoryFits(link, desired, c) {
			v, cls = mem, c
			res.Incremental, res.Adopted = true, true
		}
	}
	if v == nil {
		if v, err = r.readView(link, desired, &res); err != nil {
			return fail(err)
		}
		if cls, err = r.classifier(ctx, env, desired, &res); err != nil {
			return fail(err)
		}
	}
	actual := v.classes
	// want indexes desired's classes by minor (index+1; 0 = not desired).
	want := make([]int32, 1<<16)
	for i, c := range desired.Classes {
		want[c.Minor] = int32(i + 1)
	}
	// syncCls moves the classifier's entries to `to`: in an incremental
	// run from `from` (what the memory says it holds) without reading it
	// back, where the classifier can.
	syncCls := func(from, to *Tree) error {
		var cr ClassifierResult
		var err error
		if ds, ok := cls.(DeltaSyncer); ok && res.Incremental {
			cr, err = ds.SyncDelta(ctx, env, from, to)
		} else {
			cr, err = cls.Sync(ctx, env, to)
		}
		r.writes += cr.Writes
		res.Classifier.Added += cr.Added
		res.Classifier.Changed += cr.Changed
		res.Classifier.Deleted += cr.Deleted
		res.Classifier.Writes += cr.Writes
		res.Classifier.Notes = append(res.Classifier.Notes, cr.Notes...)
		if err != nil {
			return fmt.Errorf("dev %s: classifier %s: %w", r.dev, cls.Kind(), err)
		}
		return nil
	}
	bound := v.tree // what the classifier holds (incremental runs only)

	// Classes whose parent differs must be re-created (HTB cannot move a
	// class); so must their actual descendants.
	// So must a class that is to be a leaf but has children now (a freed
	// session minor reused by a flow): HTB would not take a leaf qdisc.
	moved := map[uint16]bool{}
	hasChildren := map[uint16]bool{}
	for _, a := range actual {
		if pmaj, pmin := netlink.MajorMinor(a.Parent); pmaj == OwnedMajor {
			hasChildren[pmin] = true
		}
	}
	for m, a := range actual {
		if i := want[m]; i != 0 {
			d := &desired.Classes[i-1]
			if !sameParent(parentID(desired, d), a.Parent) || (d.Role == RoleFlow && hasChildren[m]) {
				moved[m] = true
			}
		}
	}
	if len(moved) > 0 {
		for changed := true; changed; {
			changed = false
			for m, a := range actual {
				pmaj, pmin := netlink.MajorMinor(a.Parent)
				if !moved[m] && pmaj == OwnedMajor && moved[pmin] {
					moved[m] = true
					changed = true
				}
			}
		}
		// Unbind moved flows first, then delete them children first.
		keep := *desired
		keep.Classes = make([]Class, 0, len(desired.Classes))
		for _, c := range desired.Classes {
			if !moved[c.Minor] {
				keep.Classes = append(keep.Classes, c)
			}
		}
		if err := syncCls(bound, &keep); err != nil {
			return fail(err)
		}
		bound = &keep
		if err := r.deleteClasses(link, v, moved, desired, &res); err != nil {
			return fail(err)
		}
	}

	// Create (parents first: link, default, sessions, flows, each in minor
	// order) and change in place.
	rank := func(r Role) int {
		switch r {
		case RoleLink:
			return 0
		case RoleDefault:
			return 1
		case RoleSession:
			return 2
		}
		return 3
	}
	order := make([]int32, 0, len(desired.Classes))
	for k := 0; k < 4; k++ {
		for i := range desired.Classes {
			if rank(desired.Classes[i].Role) == k {
				order = append(order, int32(i))
			}
		}
	}
	for _, i := range order {
		c := desired.Classes[i]
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		a, ok := actual[c.Minor]
		switch {
		case !ok:
			hc := r.htbClass(link, desired, c)
			if err := r.do(func() error { return r.h.ClassReplace(hc) }); err != nil {
				return fail(fmt.Errorf("dev %s: create %s class %s: %w", r.dev, c.Role, desired.Handle(c.Minor), err))
			}
			v.written(hc)
			// The kernel destroys a leaf class's qdisc when it gains its
			// first child, and does not bring it back: forget it.
			delete(v.byParent, desired.ClassID(c.Parent))
			res.Created = append(res.Created, c.Minor)
		case !same(toKernel(desired, c), fromNetlink(a)):
			hc := r.htbClass(link, desired, c)
			if err := r.do(func() error { return r.h.ClassChange(hc) }); err != nil {
				return fail(fmt.Errorf("dev %s: change %s class %s: %w", r.dev, c.Role, desired.Handle(c.Minor), err))
			}
			v.written(hc)
			res.Changed = append(res.Changed, c.Minor)
		}
	}
	if v.root.Defcls != uint32(desired.DefaultMinor) {
		q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: rootHandle(), Parent: netlink.HANDLE_ROOT})
		q.Defcls = uint32(desired.DefaultMinor)
		if err := r.do(func() error { return r.h.QdiscChange(q) }); err != nil {
			return fail(fmt.Errorf("dev %s: set root default to %s: %w", r.dev, desired.Handle(desired.DefaultMinor), err))
		}
		v.root = q
		res.Notes = append(res.Notes, "repaired the root qdisc's default class")
	}

	// Leaf qdiscs.
	if err := r.syncLeaves(ctx, link, desired, rootState{root: v.root, owned: true, byParent: v.byParent}, &res); err != nil {
		return fail(err)
	}

	// Classifier: bind new classes, unbind stale ones.
	if err := syncCls(bound, desired); err != nil {
		return fail(err)
	}
	if !res.Incremental {
		if err := r.removeOtherClassifiers(ctx, env, cls, &res); err != nil {
			return fail(err)
		}
	}

	// Delete what is not desired, children first.
	stale := map[uint16]bool{}
	for m := range actual {
		if want[m] == 0 {
			stale[m] = true
		}
	}
	if err := r.deleteClasses(link, v, stale, desired, &res); err != nil {
		return fail(err)
	}
	res.Writes = r.writes - start
	if r.trust {
		v.tree, v.cls = cloneTree(desired), cls
		r.mem = v
	}
	return res, nil
}

// deleteClasses deletes the given classes of the view, deepest first, and
// drops them (and their leaf qdiscs) from the view.
func (r *Reconciler) deleteClasses(link netlink.Link, v *view, del map[uint16]bool, t *Tree, res *Result) error {
	if len(del) == 0 {
		return nil
	}
	actual := v.classes
	parent := make(map[uint16]uint16, len(actual))
	for m, a := range actual {
		pmaj, pmin := netlink.MajorMinor(a.Parent)
		if pmaj == OwnedMajor {
			parent[m] = pmin
		}
	}
	list := make([]uint16, 0, len(del))
	for m := range del {
		list = append(list, m)
	}
	sort.Slice(list, func(i, j int) bool {
		di, dj := depth(list[i], parent), depth(list[j], parent)
		if di != dj {
			return di > dj
		}
		return list[i] < list[j]
	})
	for _, m := range list {
		a := actual[m]
		if err := r.do(func() error { return r.h.ClassDel(a) }); err != nil {
			return fmt.Errorf("dev %s: delete class %x:%x: %w", r.dev, OwnedMajor, m, err)
		}
		v.deleted(t, m)
		res.Deleted = append(res.Deleted, m)
	}
	return nil
}
