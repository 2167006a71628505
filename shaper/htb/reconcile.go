package htb

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// run is one Reconcile: the desired tree, the device's state as the run
// sees it, and what the run has done so far.
type run struct {
	r       *Reconciler
	ctx     context.Context
	desired *plan.Tree
	link    netlink.Link
	env     classify.Env
	st      *devState
	cls     classify.Classifier
	res     *Result
	// want indexes desired's classes by minor (index+1; 0 = not desired).
	want []int32
	// bound is the table the classifier holds: remembered (incremental
	// runs), or set by this run's first sync (synced).
	bound  classify.Table
	synced bool
}

func (r *Reconciler) reconcile(ctx context.Context, desired *plan.Tree) (Result, error) {
	start := r.writes
	res := Result{Dev: r.dev}
	// The remembered state is dropped now and kept again only if this run
	// succeeds: after any error the next run reads the kernel.
	held := r.held
	r.held = nil
	u, err := r.begin(ctx, desired, held, &res)
	if err == nil {
		err = u.steps()
	}
	res.Writes = r.writes - start
	if err != nil {
		return res, err
	}
	if r.opts.Incremental {
		u.st.tree, u.st.table, u.st.cls = treeHeader(desired), u.bound, u.cls
		u.st.link, u.st.leaf = u.link, res.LeafKind
		r.held = u.st
	}
	return res, nil
}

// begin checks desired, finds the device and its state (remembered, or
// read from the kernel with the root created where there is none), and
// picks the classifier.
func (r *Reconciler) begin(ctx context.Context, desired *plan.Tree, held *devState, res *Result) (*run, error) {
	if err := checkDesired(desired); err != nil {
		return nil, fmt.Errorf("dev %s: %w", r.dev, err)
	}
	// An unusable classifier must fail before the root is created.
	if err := r.checkKind(desired); err != nil {
		return nil, err
	}
	// So must a classifier or leaf the kernel lacks.
	if err := r.checkKernel(r.requestedKind(desired.Classifier), r.requestedLeaf(desired.Leaf.Kind)); err != nil {
		return nil, err
	}
	// And one this process may not install or adopt (capabilities, pins).
	kind := r.requestedKind(desired.Classifier)
	if err := r.checkReady(kind); err != nil { // auto: CAP_NET_ADMIN only, until picked
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	link, err := r.link()
	if err != nil {
		return nil, err
	}
	hadNoRoot := kind == classify.KindAuto && r.autoKind == "" && r.noRoot(link)
	u := &run{r: r, ctx: ctx, desired: desired, link: link, res: res,
		env: classify.Env{Handle: r.h, Link: link, Root: rootHandle()}}
	if r.opts.Incremental && held != nil {
		c, err := r.classifier(ctx, u.env, desired, res)
		if err != nil {
			return nil, err
		}
		if held.usableFor(link, desired, c) {
			u.st, u.cls, u.bound = held, c, held.table
			res.Incremental, res.Adopted = true, true
		}
	}
	if u.st == nil {
		if u.st, err = r.readState(link, desired, res); err != nil {
			return nil, err
		}
		if u.cls, err = r.classifier(ctx, u.env, desired, res); err != nil {
			return nil, err
		}
		if kind == classify.KindAuto {
			if err := r.readyAfterPick(u, hadNoRoot); err != nil {
				return nil, err
			}
		}
	}
	u.want = make([]int32, 1<<16)
	for i, c := range desired.Classes {
		u.want[c.Minor] = int32(i + 1)
	}
	return u, nil
}

// steps makes the device match desired, in the order that never points a
// packet at a class that does not exist.
func (u *run) steps() error {
	if !u.res.Incremental {
		if err := u.removeForeignFilters(); err != nil {
			return err
		}
	}
	if err := u.recreateMoved(); err != nil {
		return err
	}
	if err := u.createAndChange(); err != nil {
		return err
	}
	if err := u.r.syncLeaves(u.ctx, u.link, u.desired, u.st.qdiscState, u.res); err != nil {
		return err
	}
	if err := u.syncClassifier(u.desired.Table()); err != nil {
		return err
	}
	if !u.res.Incremental {
		if err := u.r.removeOtherClassifiers(u.ctx, u.env, u.cls, u.res); err != nil {
			return err
		}
	}
	stale := map[uint16]bool{}
	for m := range u.st.classes.All() {
		if u.want[m] == 0 {
			stale[m] = true
		}
	}
	return u.deleteClasses(stale)
}

// syncClassifier moves the classifier's entries to table: from what the
// classifier is known to hold, without reading it back, where the
// classifier can and it is known — remembered (incremental runs) or made
// true by this run's first sync (a long build syncs once per chunk of
// classes, and reading 65k entries back each time would cost more than
// writing them).
func (u *run) syncClassifier(table classify.Table) error {
	var cr classify.Result
	var err error
	if ds, ok := u.cls.(classify.DeltaSyncer); ok && (u.res.Incremental || u.synced) {
		cr, err = ds.SyncDelta(u.ctx, u.env, u.bound, table)
	} else {
		cr, err = u.cls.Sync(u.ctx, u.env, table)
	}
	u.r.writes += cr.Writes
	u.res.Classifier.Add(cr)
	if err != nil {
		return fmt.Errorf("dev %s: classifier %s: %w", u.r.dev, u.cls.Kind(), err)
	}
	u.bound, u.synced = table, true
	return nil
}

// recreateMoved deletes the classes whose parent differs (HTB cannot move a
// class) and their descendants, and a class that is to be a leaf but has
// children now (a freed session minor reused by a flow: HTB would not take
// a leaf qdisc); the create step then builds them again.
func (u *run) recreateMoved() error {
	actual := &u.st.classes
	moved := map[uint16]bool{}
	hasChildren := map[uint16]bool{}
	for _, a := range actual.All() {
		if pmaj, pmin := netlink.MajorMinor(a.parent); pmaj == plan.OwnedMajor {
			hasChildren[pmin] = true
		}
	}
	for m, a := range actual.All() {
		if i := u.want[m]; i != 0 {
			d := &u.desired.Classes[i-1]
			if !sameParent(parentID(u.desired, d), a.parent) || (d.Role == shaper.RoleFlow && hasChildren[m]) {
				moved[m] = true
			}
		}
	}
	if len(moved) == 0 {
		return nil
	}
	for changed := true; changed; {
		changed = false
		for m, a := range actual.All() {
			pmaj, pmin := netlink.MajorMinor(a.parent)
			if !moved[m] && pmaj == plan.OwnedMajor && moved[pmin] {
				moved[m] = true
				changed = true
			}
		}
	}
	// Unbind the moved flows first, then delete them children first. The
	// table binds only classes that exist and stay: a new flow's class
	// does not exist yet, and binding it now would send its packets to the
	// default class until step 3 creates it (the final sync binds it).
	stay := u.desired.TableOf(func(m uint16) bool {
		_, exists := actual.Get(m)
		return exists && !moved[m]
	})
	if err := u.syncClassifier(stay); err != nil {
		return err
	}
	return u.deleteClasses(moved)
}

// rank orders roles parents first.
func rank(r shaper.Role) int {
	switch r {
	case shaper.RoleLink:
		return 0
	case shaper.RoleDefault:
		return 1
	case shaper.RoleSession:
		return 2
	}
	return 3 // flows and spares
}

// createAndChange creates missing classes (parents first: link, default,
// sessions, flows, each in minor order) and changes in place those whose
// rate, ceil, burst, cburst, quantum or prio differ.
func (u *run) createAndChange() error {
	d := u.desired
	order := make([]int32, 0, len(d.Classes))
	for k := 0; k < 4; k++ {
		for i := range d.Classes {
			if rank(d.Classes[i].Role) == k {
				order = append(order, int32(i))
			}
		}
	}
	chunks := newChunkBinder(u.r.bind)
	for n, i := range order {
		c := d.Classes[i]
		if err := u.ctx.Err(); err != nil {
			return err
		}
		a, ok := u.st.classes.Get(c.Minor)
		switch {
		case !ok:
			hc, over, err := u.r.writeClass(u.link, d, c, true)
			if err != nil {
				return fmt.Errorf("dev %s: create %s class %s: %w", u.r.dev, c.Role, d.Handle(c.Minor), err)
			}
			u.st.written(hc, over)
			// The kernel destroys a leaf class's qdisc when it gains its
			// first child, and does not bring it back: forget it.
			delete(u.st.byParent, d.ClassID(c.Parent))
			u.res.Created = append(u.res.Created, c.Minor)
			if n < len(order)-1 && chunks.due(c.Role) {
				if err := u.bindExisting(); err != nil {
					return err
				}
			}
		case !same(toKernel(d, c), a):
			hc, over, err := u.r.writeClass(u.link, d, c, false)
			if err != nil {
				return fmt.Errorf("dev %s: change %s class %s: %w", u.r.dev, c.Role, d.Handle(c.Minor), err)
			}
			u.st.written(hc, over)
			u.res.Changed = append(u.res.Changed, c.Minor)
		}
	}
	return nil
}

// deleteClasses deletes the given classes, deepest first, and drops them
// (and their leaf qdiscs) from the state.
func (u *run) deleteClasses(del map[uint16]bool) error {
	if len(del) == 0 {
		return nil
	}
	actual := &u.st.classes
	parent := make(map[uint16]uint16, actual.Len())
	for m, a := range actual.All() {
		pmaj, pmin := netlink.MajorMinor(a.parent)
		if pmaj == plan.OwnedMajor {
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
		a, _ := actual.Get(m)
		if err := u.r.do(func() error { return u.r.classDel(u.link.Attrs().Index, m, a) }); err != nil {
			return fmt.Errorf("dev %s: delete class %x:%x: %w", u.r.dev, plan.OwnedMajor, m, err)
		}
		u.st.deleted(u.desired, m)
		u.res.Deleted = append(u.res.Deleted, m)
	}
	return nil
}

// checkDesired fails on a tree Reconcile cannot build: nil, another root,
// no link or default class.
func checkDesired(t *plan.Tree) error {
	if t == nil {
		return errors.New("no desired tree (plan failed)")
	}
	if t.Major != plan.OwnedMajor {
		return fmt.Errorf("desired tree has root major %x, want %x", t.Major, plan.OwnedMajor)
	}
	l, ok1 := t.Find(plan.LinkMinor)
	d, ok2 := t.Find(t.DefaultMinor)
	if !ok1 || !ok2 || l.Role != shaper.RoleLink || d.Role != shaper.RoleDefault {
		return errors.New("desired tree lacks its link or default class")
	}
	return nil
}
