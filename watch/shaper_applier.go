package watch

import (
	"context"
	"fmt"
	"sync"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// Reconciler is the part of *htb.Reconciler the ShaperApplier uses.
type Reconciler interface {
	Dev() string
	Reconcile(ctx context.Context, desired *htb.Tree) (htb.Result, error)
	Actual(ctx context.Context) (*htb.Tree, error)
	Reset(ctx context.Context) error
	ClassStats(ctx context.Context) (map[uint32]htb.ClassStats, error)
}

// lastWriteTruster is implemented by *htb.Reconciler: its incremental
// mode (htb.WithIncremental) and the call that ends it for one run.
type lastWriteTruster interface {
	SetIncremental(on bool)
	Resync()
}

// ShaperApplier is the Applier for one device built on the shaper: it plans
// with htb.Plan (the same planner as `gtpqos apply`) and reconciles with
// a htb.Reconciler.
//
// It puts the Reconciler in incremental mode: a reconcile trusts the last
// successful write instead of reading the device's tree back, so an event
// costs the plan and the few writes it needs. Forget (called by the engine
// for every full resync: start, periodic, reconnect, lost events, retry
// after a failure, reload) makes the next reconcile read the kernel and
// repair drift; any failed reconcile does the same.
//
// Class ids stay stable: each plan passes the previous desired tree as
// Policy.Previous, and the first plan (or the first after a failure, when
// the device may have been recreated) passes the kernel's actual tree, so a
// restarted daemon adopts the classes it finds instead of recreating them.
// It is safe for concurrent use (metrics scrapes call Stats).
type ShaperApplier struct {
	mu   sync.Mutex
	rec  Reconciler
	pol  shaper.Policy
	prev *htb.Tree
}

// NewShaperApplier returns an Applier planning with pol and reconciling
// with rec.
func NewShaperApplier(rec Reconciler, pol shaper.Policy) *ShaperApplier {
	if t, ok := rec.(lastWriteTruster); ok {
		t.SetIncremental(true)
	}
	return &ShaperApplier{rec: rec, pol: pol}
}

// Forget makes the next Apply read the device's tree from the kernel (a
// full resync that repairs drift) instead of trusting the last write.
func (a *ShaperApplier) Forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.rec.(lastWriteTruster); ok {
		t.Resync()
	}
}

// Dev returns the device name.
func (a *ShaperApplier) Dev() string { return a.rec.Dev() }

// SetPolicy replaces the policy (config reload); the next Apply uses it.
func (a *ShaperApplier) SetPolicy(pol shaper.Policy) {
	a.mu.Lock()
	a.pol = pol
	a.mu.Unlock()
}

// Tree returns the last desired tree that was reconciled (nil before the
// first success).
func (a *ShaperApplier) Tree() *htb.Tree {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.prev
}

// Apply plans the tree for flows and reconciles the device to it.
func (a *ShaperApplier) Apply(ctx context.Context, flows []shaper.Flow) (Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	prev := a.prev
	if prev == nil {
		actual, err := a.rec.Actual(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("read the tree on %s: %w", a.rec.Dev(), err)
		}
		prev = actual // nil when the device has no tree yet
	}
	pol := a.pol
	tree, problems := htb.Plan(flows, pol, prev)
	res := Result{Flows: len(flows), Problems: convertProblems(flows, problems)}
	if tree == nil {
		if p, ok := shaper.FirstError(problems); ok {
			return res, fmt.Errorf("plan for %s: %s", a.rec.Dev(), p.Error())
		}
		return res, fmt.Errorf("plan for %s: no tree", a.rec.Dev())
	}
	res.Classes = len(tree.Classes)
	sr, err := a.rec.Reconcile(ctx, tree)
	if err != nil {
		// The device may be gone or recreated: read it afresh next time.
		a.prev = nil
		return res, fmt.Errorf("reconcile %s: %w", a.rec.Dev(), err)
	}
	res.Changes = describeChanges(sr, tree, prev)
	a.prev = tree
	return res, nil
}

// Remove deletes everything gtpqos owns on the device.
func (a *ShaperApplier) Remove(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.prev = nil
	return a.rec.Reset(ctx)
}

// Stats returns the counters of the flow classes of the last tree.
func (a *ShaperApplier) Stats(ctx context.Context) ([]ClassStats, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.prev == nil {
		return nil, nil
	}
	st, err := a.rec.ClassStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("class counters on %s: %w", a.rec.Dev(), err)
	}
	var out []ClassStats
	for _, c := range a.prev.FlowClasses() {
		s, ok := st[a.prev.ClassID(c.Minor)]
		if !ok {
			continue
		}
		out = append(out, ClassStats{
			Class: a.prev.Handle(c.Minor), Flow: c.Flow, QFI: c.QFI,
			Bytes: s.Bytes, Packets: s.Packets, Drops: uint64(s.Drops), Overlimits: uint64(s.Overlimits),
		})
	}
	return out, nil
}

// describeChanges turns a shaper result into per-class changes, naming the
// flow of each class (from the new tree, or the old one for deletions).
func describeChanges(sr htb.Result, tree, prev *htb.Tree) []Change {
	var out []Change
	if sr.CreatedRoot {
		out = append(out, Change{Op: "add", Object: "qdisc", Class: tree.Handle(0),
			Detail: fmt.Sprintf("root htb, link %s", shaper.FormatRate(tree.LinkRate))})
	}
	classChange := func(op string, t *htb.Tree, minor uint16) Change {
		c := Change{Op: op, Object: "class", Class: fmt.Sprintf("%x:%x", htb.OwnedMajor, minor)}
		if t == nil {
			return c
		}
		cl, ok := t.Find(minor)
		if !ok {
			return c
		}
		c.Flow, c.QFI = cl.Flow, cl.QFI
		if cl.Role == shaper.RoleSession {
			c.Flow = shaper.FlowID{SEID: cl.SEID}
		}
		if op != "delete" {
			c.Detail = fmt.Sprintf("%s rate %s ceil %s", cl.Role, shaper.FormatRate(cl.Rate), shaper.FormatRate(cl.Ceil))
		} else {
			c.Detail = cl.Role.String()
		}
		return c
	}
	for _, m := range sr.Created {
		out = append(out, classChange("add", tree, m))
	}
	for _, m := range sr.Changed {
		out = append(out, classChange("change", tree, m))
	}
	for _, m := range sr.Deleted {
		out = append(out, classChange("delete", prev, m))
	}
	cr := sr.Classifier
	if n := cr.Added + cr.Changed + cr.Deleted; n > 0 {
		out = append(out, Change{Op: "sync", Object: string(sr.ClassifierKind),
			Detail: fmt.Sprintf("classifier entries added %d, changed %d, deleted %d", cr.Added, cr.Changed, cr.Deleted)})
	}
	return out
}

// convertProblems turns the planner's problems into watch problems.
func convertProblems(flows []shaper.Flow, ps []shaper.Problem) []Problem {
	if len(ps) == 0 {
		return nil
	}
	qfi := make(map[shaper.FlowID]uint8, len(flows))
	for _, f := range flows {
		qfi[f.ID] = f.QFI
	}
	out := make([]Problem, 0, len(ps))
	for _, p := range ps {
		out = append(out, Problem{Flow: p.Flow, QFI: qfi[p.Flow],
			Msg: fmt.Sprintf("%s: %s: %s", p.Severity, p.Field, p.Detail)})
	}
	return out
}
