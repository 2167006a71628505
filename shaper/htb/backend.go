package htb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// Name is the backend's name in policies and output.
const Name = plan.Name

// Options configure the HTB backend on one device: a Backend (Open) and the
// Reconciler it writes through (NewReconciler, which reads Force,
// Classifier, Custom, Leaf, Incremental and NetNS; the others are the
// Backend's). Package shaper/backends fills them from its Options.
type Options struct {
	// Force lets Apply (and Reconcile) replace a root qdisc gtpqos did not
	// create.
	Force bool
	// Classifier overrides the policy's classifier kind ("" keeps it; auto
	// makes the reconciler pick, whatever the policy says).
	Classifier classify.Kind
	// Custom is the classifier to use instead of a built-in one (package
	// gtpu's views); its kind overrides the policy's and Classifier.
	Custom classify.Classifier
	// Leaf overrides the policy's leaf kind ("" keeps it).
	Leaf plan.LeafKind
	// Incremental makes Apply trust its last successful write between
	// Resyncs: after a successful Reconcile the Reconciler remembers the
	// tree it made true, and the next one diffs against it instead of
	// reading the device back (see Reconciler.Reconcile). Off by default.
	Incremental bool
	// NetNS is the network namespace h works in; the backend opens its own
	// route-netlink socket there (0 or netns.None(): the current one).
	NetNS netns.NsHandle
	// N3 names the N3 device, where the GTP-U classifier keeps the uplink
	// (TEID, QFI) -> mark entries an N6 tree's classes are bound by.
	N3 string
	// OnPool, if set, is called from the background goroutine that fills
	// the pool of spare classes (incremental mode): ready of want spares
	// exist, after every few classes and when it stops.
	OnPool func(dev string, ready, want int)
	// Direction is the direction of the flows this device shapes: downlink
	// (N3: packets leave as GTP-U frames) or uplink (N6); it decides the
	// overhead packet accounting takes off (0: downlink).
	Direction shaper.Direction
}

// Backend is the HTB backend (shaper.Backend) for one device. It keeps the
// last planned tree so class ids stay stable from one Apply to the next,
// and is safe for concurrent use.
type Backend struct {
	mu    sync.Mutex
	h     *netlink.Handle
	raw   *rtnl
	close func()
	dev   string
	opts  Options
	rec   *Reconciler
	// plan is what the last Apply and the Updates since made true (nil:
	// plan against the kernel's tree next time), and pol the policy it was
	// made for. It is the plan; what the device holds, in the kernel's
	// units, is rec's record (devState). updated says an Update wrote
	// since the last Apply: rec's record then lacks the classifier entries
	// the Updates wrote, so the next Apply has rec read the device.
	plan    *plan.State
	pol     shaper.Policy
	updated bool
	// planned says a plan was ever kept: a scrape then knows why there
	// are no counters. closed is set by Close (before it closes the stats
	// socket, so no scrape opens another after it).
	planned bool
	closed  atomic.Bool
	grow    *grower
	stats   statsSocket
}

// Open returns the HTB backend for dev through h, which works in network
// namespace o.NetNS (h is kept open for the Backend's life; closeH, if not
// nil, is called by Close). It opens the backend's own route-netlink socket
// there.
func Open(h *netlink.Handle, closeH func(), dev string, o Options) (*Backend, error) {
	raw, err := dialRtnl(o.NetNS)
	if err != nil {
		return nil, fmt.Errorf("dev %s: %w", dev, err)
	}
	b := &Backend{h: h, raw: raw, close: closeH, dev: dev, opts: o, rec: newReconciler(h, dev, o, raw)}
	if o.Incremental {
		b.startGrower()
	}
	return b, nil
}

// Name returns "htb".
func (b *Backend) Name() string { return Name }

// Dev returns the device.
func (b *Backend) Dev() string { return b.dev }

// Reconciler returns the backend's reconciler (for tests and benchmarks
// that count its reads).
func (b *Backend) Reconciler() *Reconciler { return b.rec }

// Apply implements shaper.Backend.
func (b *Backend) Apply(ctx context.Context, flows []shaper.Flow, pol shaper.Policy, opt shaper.ApplyOptions) (shaper.Report, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.apply(ctx, flows, pol, opt)
}

// Update implements shaper.Backend: with the plan of the last Apply it
// plans the changed sessions alone and writes only what changed, reading
// nothing back. It needs incremental mode.
func (b *Backend) Update(ctx context.Context, sessions map[uint64][]shaper.Flow, pol shaper.Policy) (shaper.Report, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rep := shaper.Report{Dev: b.dev, Backend: Name}
	if b.plan == nil || pol != b.pol || !b.opts.Incremental {
		return rep, fmt.Errorf("dev %s: %w", b.dev, shaper.ErrFullApplyNeeded)
	}
	d := b.plan.Apply(sessions)
	rep.Problems, rep.ProblemsSame = b.plan.AllProblems()
	rep.Flows, rep.ClassCount = len(b.plan.Minor), b.plan.Classes.Len()
	if d.Empty() {
		rep.Summary = fmt.Sprintf("dev %s: in sync", b.dev)
		return rep, nil
	}
	b.updated = true
	res, err := b.rec.writeDelta(ctx, d)
	rep.Writes, rep.Summary = res.Writes, res.Summary()
	rep.Notes = append(rep.Notes, res.Classifier.Notes...)
	if err != nil {
		// The device may be gone or changed: read it afresh next time.
		b.plan = nil
		return rep, err
	}
	rep.Changes = deltaChanges(d, res.ClassifierKind)
	b.refillIfLow()
	for _, c := range append(slices.Clone(d.Create), d.Change...) {
		rep.Classes = append(rep.Classes, classState(&plan.Tree{Major: plan.OwnedMajor}, c))
	}
	return rep, nil
}

// Classes implements shaper.Backend.
func (b *Backend) Classes() []shaper.ClassState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.plan == nil {
		return nil
	}
	return classStates(b.plan.Desired())
}

// apply plans flows against the previous tree (or the kernel's) and
// reconciles the device to the plan; b.mu is held.
func (b *Backend) apply(ctx context.Context, flows []shaper.Flow, pol shaper.Policy, opt shaper.ApplyOptions) (shaper.Report, error) {
	if rep, ok, err := b.resyncKept(ctx, flows, pol, opt); ok {
		return rep, err
	}
	rep := shaper.Report{Dev: b.dev, Backend: Name, Flows: len(flows)}
	var prev *plan.Tree
	if b.plan != nil {
		prev = b.plan.Desired()
	}
	// This run makes the kept plan anew (or fails, and the next run reads
	// the device): let the old one go now rather than hold both at once,
	// tens of megabytes at 65k flows.
	b.plan = nil
	b.forgetUpdates()
	if prev == nil {
		actual, err := b.rec.Actual(ctx)
		if err != nil && !(b.opts.Force && errors.Is(err, shaper.ErrNotOwned)) {
			return rep, err
		}
		prev = actual // nil when the device has no tree yet
	}
	planPol, note, err := b.resolve(pol)
	if err != nil {
		return rep, err
	}
	tree, problems := plan.Plan(flows, planPol, prev)
	keys := b.rec.keyCheck(tree)
	rep.Problems = append(problems, b.warnings(tree, keys)...)
	if tree != nil {
		rep.Accounting, rep.Overhead = tree.Accounting, tree.Overhead
		rep.Notes = append(rep.Notes, note)
	}
	if p, bad := shaper.FirstError(problems); bad && (tree == nil || opt.Strict) {
		return rep, fmt.Errorf("dev %s: %w", b.dev, p)
	}
	if err := b.reconcile(ctx, tree, prev, opt, &rep); err != nil {
		return rep, err // the device may be gone or recreated: the next run reads it
	}
	b.pol = pol
	// The warnings go into the kept plan too: an Update reports them for
	// the flows it leaves alone and checks the ones it places.
	if st, err := plan.NewState(tree, shaper.GroupBySession(flows), planPol, rep.Problems); err == nil {
		st.Keys = keys
		b.plan, b.planned = st, true
		b.requestSpares()
	}
	return rep, nil
}

// resyncKept reconciles the device to the kept plan when flows and pol
// are what it was made from; ok false means a full plan is needed (nothing
// was written). A strict Apply always plans (it fails on the plan's
// errors). b.mu is held.
func (b *Backend) resyncKept(ctx context.Context, flows []shaper.Flow, pol shaper.Policy, opt shaper.ApplyOptions) (rep shaper.Report, ok bool, err error) {
	st := b.plan
	if st == nil || opt.Strict || pol != b.pol || !st.SameInput(flows) {
		return rep, false, nil
	}
	planPol, note, err := b.resolve(pol)
	if err != nil {
		return rep, false, nil // the full plan reports it
	}
	if checked, _, valid := plan.CheckPolicy(planPol); !valid || checked != st.Pol {
		return rep, false, nil // e.g. the device's packet overhead changed
	}
	tree := st.Desired()
	keys := b.rec.keyCheck(tree)
	if keys.Kind != st.Keys.Kind || (keys.KN == nil) != (st.Keys.KN == nil) {
		return rep, false, nil
	}
	b.forgetUpdates()
	rep = shaper.Report{Dev: b.dev, Backend: Name, Flows: len(flows), Accounting: tree.Accounting, Overhead: tree.Overhead,
		Notes: []string{note}}
	if err := b.reconcile(ctx, tree, tree, opt, &rep); err != nil {
		b.plan = nil // the device may be gone or recreated: the next run reads it
		return rep, true, err
	}
	if link, err := b.h.LinkByName(b.dev); err == nil {
		st.SetDeviceProblems(linkProblems(link))
	}
	rep.Problems, _ = st.AllProblems()
	b.requestSpares()
	return rep, true, nil
}

// forgetUpdates makes the next reconcile read the device when Updates
// wrote since the last Apply: the reconciler remembers the tree of that
// Apply, not what the Updates wrote.
func (b *Backend) forgetUpdates() {
	if b.updated {
		b.rec.Resync()
		b.updated = false
	}
}

// reconcile makes the device hold tree and says so in rep: the writes, the
// notes, the changes against prev and, unless opt asks for none, the class
// list.
func (b *Backend) reconcile(ctx context.Context, tree, prev *plan.Tree, opt shaper.ApplyOptions, rep *shaper.Report) error {
	res, err := b.rec.Reconcile(ctx, tree)
	rep.Writes, rep.Summary = res.Writes, res.Summary()
	rep.Notes = append(append(rep.Notes, res.Notes...), res.Classifier.Notes...)
	if err != nil {
		return err
	}
	rep.Changes = changes(res, tree, prev)
	rep.ClassCount = len(tree.Classes)
	if !opt.NoClassList {
		rep.Classes = classStates(tree)
	}
	return nil
}

// resolve applies the backend's overrides to pol and fixes its overhead
// from the device (link type, addresses) and the backend's direction; note
// says which bytes the classes count and why.
func (b *Backend) resolve(sp shaper.Policy) (plan.Policy, string, error) {
	pol, err := plan.PolicyOf(sp)
	if err != nil {
		return pol, "", fmt.Errorf("dev %s: %w", b.dev, err)
	}
	pol = b.policy(pol)
	dir := b.opts.Direction
	if dir == 0 {
		dir = shaper.Downlink
	}
	enc := shaper.DefaultEncap
	if pol.Accounting == shaper.AccountPacket && !pol.Overhead.Fixed {
		link, err := b.h.LinkByName(b.dev)
		if err != nil {
			return pol, "", fmt.Errorf("device %s: %w", b.dev, err)
		}
		if enc, err = readEncap(b.h, link, dir); err != nil {
			return pol, "", err
		}
	}
	over, why := pol.ResolveOverhead(dir, enc)
	pol.Overhead = shaper.Overhead{Fixed: true, Bytes: over}
	return pol, AccountingNote(pol.Accounting, over, why), nil
}

// AccountingNote is the one line that says which bytes a tree's classes
// count: "accounting packet: classes count the user's packets (overhead 58:
// N3: Ethernet 14 + ...; the link class adds it back and counts frames)".
func AccountingNote(a shaper.Accounting, over uint32, why string) string {
	if a != shaper.AccountPacket {
		return "accounting frame: every class counts whole frames at the qdisc (no size table)"
	}
	return fmt.Sprintf("accounting packet: classes count the user's packets, %d bytes less than the frame (%s); the link class adds them back and counts frames", over, why)
}

// policy applies the backend's overrides to pol.
func (b *Backend) policy(pol plan.Policy) plan.Policy {
	switch {
	case b.opts.Custom != nil:
		pol.Classifier = b.opts.Custom.Kind()
	case b.opts.Classifier != "":
		pol.Classifier = b.opts.Classifier
	}
	if b.opts.Leaf != "" {
		pol.Leaf.Kind = b.opts.Leaf
	}
	return pol
}

// Counters implements shaper.Backend.
func (b *Backend) Counters(ctx context.Context) (map[string]shaper.Counters, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.rec.ClassStats(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]shaper.Counters, len(st))
	for id, s := range st {
		out[classify.Handle(id)] = s.counters()
	}
	return out, nil
}

// Resync implements shaper.Backend.
func (b *Backend) Resync() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rec.Resync()
}

// Close stops the pool's background work and releases the netlink handle
// (when the Backend was given a closer). The device keeps its tree and
// classifier.
func (b *Backend) Close() error {
	b.stopGrower()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed.Store(true)
	b.rec.Close()
	b.raw.close()
	b.stats.mu.Lock()
	b.stats.c.close()
	b.stats.c = nil
	b.stats.mu.Unlock()
	if b.close != nil {
		b.close()
		b.close = nil
	}
	return nil
}

// Reset implements shaper.Backend: it removes the GTP-U classifier's clsact
// filters (and the clsact qdisc if gtpqos added it and nothing else is on
// it) and the HTB tree rooted at OwnedMajor, with the mark classifier
// under it. A foreign root qdisc stays.
func (b *Backend) Reset(ctx context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.plan, b.planned = nil, false
	link, err := b.h.LinkByName(b.dev)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", b.dev, err)
	}
	lines, err := gtpu.RemoveAll(b.h, link)
	if err != nil {
		return lines, err
	}
	t, err := b.rec.Actual(ctx)
	switch {
	case errors.Is(err, shaper.ErrNotOwned) || (err == nil && t == nil):
		if len(lines) == 0 {
			return []string{fmt.Sprintf("dev %s: no gtpqos tree or classifier (nothing removed)", b.dev)}, nil
		}
		return append(lines, fmt.Sprintf("dev %s: no gtpqos tree", b.dev)), nil
	case err != nil:
		return lines, err
	}
	if err := b.rec.Reset(ctx); err != nil {
		return lines, err
	}
	what := ""
	if t.Classifier != "" {
		what = fmt.Sprintf(", classifier %s", t.Classifier)
	}
	return append(lines, fmt.Sprintf("dev %s: removed the gtpqos tree (%d classes%s)", b.dev, len(t.Classes), what)), nil
}
