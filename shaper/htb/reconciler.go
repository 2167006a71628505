package htb

import (
	"context"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

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
