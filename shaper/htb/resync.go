package htb

import (
	"context"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

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
