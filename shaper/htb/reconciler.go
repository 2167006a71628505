package htb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// Reconciler makes one device's HTB tree match a desired Tree. It keeps one
// netlink handle for its lifetime (pass netlink.NewHandleAt(ns,
// unix.NETLINK_ROUTE) to work in a network namespace, with Options.NetNS
// ns) and a route-netlink socket of its own for what the handle cannot
// express (the root's size table, rate-spec overheads, batches), and
// remembers the classifier and leaf it detected.
// It is not safe for concurrent use.
type Reconciler struct {
	h   *netlink.Handle
	dev string
	// opts are the Options it was made with; of them it reads Force,
	// Classifier, Custom, Leaf, Incremental and NetNS.
	opts Options
	// raw is the route-netlink socket once open (in opts.NetNS), and
	// ownRaw says Close closes it; rawIndex is the ifindex the socket was
	// checked to see dev at.
	raw      *rtnl
	ownRaw   bool
	rawIndex int
	// leafAuto and autoKind are the leaf and classifier kinds auto
	// picked, once picked.
	leafAuto   plan.LeafKind
	autoKind   classify.Kind
	writes     int
	classCache map[classify.Kind]classify.Classifier
	// ready holds the kinds checkReady passed.
	ready map[classify.Kind]bool
	// held is what the device holds as the last successful Reconcile
	// left it, remembered in incremental mode (nil: read the kernel next
	// time).
	held  *devState
	reads int
	// bind is how often a build binds the flow classes it has created so
	// far (bindChunk).
	bind bindChunk
}

// NewReconciler returns a Reconciler for device dev through handle h,
// configured by o (the fields a Reconciler reads are listed on Options).
// h must stay open as long as the Reconciler is used; the caller closes
// it. The Reconciler opens its own route-netlink socket in o.NetNS;
// without it, in the current namespace, and it refuses to write when that
// socket does not see the device the handle sees.
func NewReconciler(h *netlink.Handle, dev string, o Options) *Reconciler {
	return newReconciler(h, dev, o, nil)
}

// newReconciler is NewReconciler sharing an open socket (the Backend's)
// when raw is not nil.
func newReconciler(h *netlink.Handle, dev string, o Options, raw *rtnl) *Reconciler {
	if o.NetNS == 0 {
		o.NetNS = netns.None()
	}
	return &Reconciler{h: h, dev: dev, opts: o, raw: raw, classCache: map[classify.Kind]classify.Classifier{},
		bind: defaultBindChunk}
}

// Close closes the route-netlink socket the Reconciler opened (not h, which
// the caller owns). The device keeps its tree.
func (r *Reconciler) Close() {
	if r.ownRaw {
		r.raw.close()
		r.raw, r.ownRaw = nil, false
	}
}

// Dev returns the device name.
func (r *Reconciler) Dev() string { return r.dev }

// Writes returns the number of kernel writes this Reconciler has made.
func (r *Reconciler) Writes() int { return r.writes }

// Resync makes the next Reconcile read the device's tree from the kernel
// and repair any drift (a full resync) instead of trusting what the last
// one made true. Outside incremental mode every Reconcile reads the kernel.
func (r *Reconciler) Resync() { r.held = nil }

// ClassListReads returns how many times this Reconciler has read the
// device's class list back from the kernel (full Reconcile runs and Actual;
// ClassStats is not counted).
func (r *Reconciler) ClassListReads() int { return r.reads }

// Reconcile makes the device's tree match desired with the fewest writes,
// in an order that never points a packet at a class that does not exist:
//
//  1. the root HTB (handle OwnedMajor:, default DefaultMinor), the link class
//     and the default class are created first if missing (if any of them
//     fails on a fresh device, the root is deleted again so packets never sit
//     in HTB's unshaped direct queue);
//  2. classes whose parent differs are unbound from the classifier and
//     deleted with their descendants (HTB cannot move a class), to be
//     re-created in the next step;
//  3. classes are created parents first, and changed in place (ClassChange)
//     when rate, ceil, burst, cburst, quantum or prio differ;
//  4. the root's default is repaired if it names another class;
//  5. leaf qdiscs are created or replaced where they differ;
//  6. the classifier syncs (adds entries for new classes, removes stale
//     ones), and on a full run the built-in classifiers not in use are
//     removed;
//  7. classes not in desired are deleted, children first.
//
// A class whose parent differs is the only thing deleted and re-created
// (HTB cannot move a class). A second call with the same desired tree makes
// no writes. A root qdisc gtpqos did not create makes Reconcile fail with
// shaper.ErrNotOwned unless Options.Force.
//
// By default every Reconcile first reads the device's root qdisc, classes,
// leaf qdiscs and classifier entries. In incremental mode
// (Options.Incremental), a Reconcile after a successful one reads nothing
// back: it diffs desired against the tree the last run made true, with the
// same order of writes (classes changed in place, classifier entries
// removed before their classes, no packet pointed at HTB's direct queue),
// and Result.Incremental is set. Changes made behind its back are not seen
// until a full run: the first one, the one after any error, after Resync,
// or when desired switches classifier or leaf spec, or the device was
// recreated (another ifindex).
func (r *Reconciler) Reconcile(ctx context.Context, desired *plan.Tree) (Result, error) {
	return r.reconcile(ctx, desired)
}

// Actual reads the device's tree: classes under the owned root with rates in
// bit/s and bursts in bytes (converted from the kernel's bytes/s and ticks),
// the leaf kind, and the classifier's bindings (marks) on the flow classes.
// Flow ids are unknown to the kernel and left zero. It returns (nil, nil)
// when the device has no gtpqos tree, and wraps shaper.ErrNotOwned when its root
// qdisc belongs to someone else.
func (r *Reconciler) Actual(ctx context.Context) (*plan.Tree, error) { return r.actual(ctx) }

// Reset removes what gtpqos owns on the device: the classifier's objects and
// the root HTB qdisc (with every class, leaf and filter under it), so the
// kernel's default root qdisc returns. A device without a gtpqos tree is left
// alone (nil error).
func (r *Reconciler) Reset(ctx context.Context) error {
	r.held = nil
	return r.reset(ctx)
}

// ClassStats returns every class's counters under the owned root, keyed by
// full class id (Tree.ClassID(minor)).
func (r *Reconciler) ClassStats(ctx context.Context) (map[uint32]ClassStats, error) {
	return r.classStats(ctx)
}

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

// bindChunk is how often a run that creates many flow classes binds the
// ones it has created so far: after Classes new flow classes or Every,
// whichever comes first. A build of 65,518 classes takes minutes (a class
// create walks every class of the qdisc); binding only at the end would
// leave every flow in the default class all that time, and a build killed
// half-way with nothing bound.
type bindChunk struct {
	Classes int
	Every   time.Duration
}

// defaultBindChunk binds every 1,024 created flow classes or every 2 s: a
// sync reads the classifier back in a full run (tens of ms at 65k entries),
// so a build of 10k classes pays about ten of them.
var defaultBindChunk = bindChunk{Classes: 1024, Every: 2 * time.Second}

// chunkBinder counts a run's created flow classes and says when to bind.
type chunkBinder struct {
	c       bindChunk
	created int
	since   time.Time
}

func newChunkBinder(c bindChunk) *chunkBinder { return &chunkBinder{c: c, since: time.Now()} }

// due records one created class of role r and reports whether the classes
// created so far should be bound now.
func (b *chunkBinder) due(r shaper.Role) bool {
	if r != shaper.RoleFlow || b.c.Classes <= 0 {
		return false
	}
	b.created++
	if b.created < b.c.Classes && time.Since(b.since) < b.c.Every {
		return false
	}
	b.created, b.since = 0, time.Now()
	return true
}

// bindExisting binds every desired flow class that exists now (created by
// this run, or there before it and not moved).
func (u *run) bindExisting() error {
	return u.syncClassifier(u.desired.TableOf(func(m uint16) bool {
		_, exists := u.st.classes.Get(m)
		return exists
	}))
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
