package htb

import (
	"context"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
)

// A periodic resync hands Apply the flows the kept plan already holds: the
// daemon's events keep both in step, and what may have drifted is the
// kernel's tree. Planning every flow again would only make the kept plan
// anew (at 65k flows most of a resync's time, and a second copy of the
// plan in memory while it runs), so Apply reconciles the device to the
// kept plan's tree instead. Anything else (other flows, another policy, a
// device whose packet overhead changed, a classifier of another kind)
// takes a full plan.

// sameInput reports whether flows are the kept plan's input: sessions in
// ascending SEID order, each session's flows in one run, in the order they
// were last given (the engine lists flows by id, and a session keeps its
// flows in id order). Ascending SEIDs make a session listed twice, or one
// listed twice in place of another, a difference and not a match; flows in
// any other order take a full plan, which is right, only slower.
func (s *planState) sameInput(flows []shaper.Flow) bool {
	sessions := 0
	for i := 0; i < len(flows); {
		seid := flows[i].ID.SEID
		if i > 0 && seid <= flows[i-1].ID.SEID {
			return false
		}
		j := i + 1
		for j < len(flows) && flows[j].ID.SEID == seid {
			j++
		}
		if !slices.Equal(flows[i:j], s.input[seid]) {
			return false
		}
		sessions++
		i = j
	}
	return sessions == len(s.input)
}

// desired is the kept plan as a tree with the header a plan under the kept
// policy makes (planHeader), classes sorted by minor.
func (s *planState) desired() *Tree {
	t := planHeader(s.pol)
	t.Classes = make([]Class, 0, s.classes.len())
	for _, c := range s.classes.all() {
		t.Classes = append(t.Classes, c)
	}
	return t
}

// setDeviceProblems replaces the device's warnings (down, no carrier)
// among the policy's problems.
func (s *planState) setDeviceProblems(ps []shaper.Problem) {
	kept := slices.DeleteFunc(slices.Clone(s.policyPr), func(p shaper.Problem) bool { return p.Kind == shaper.DeviceDown })
	kept = append(kept, ps...)
	if !slices.Equal(kept, s.policyPr) {
		s.policyPr = kept
		s.problems.gen++
	}
}

// resyncKept reconciles the device to the kept plan when flows and pol
// are what it was made from; ok false means a full plan is needed (nothing
// was written). A strict Apply always plans (it fails on the plan's
// errors). b.mu is held.
func (b *Backend) resyncKept(ctx context.Context, flows []shaper.Flow, pol shaper.Policy, opt shaper.ApplyOptions) (rep shaper.Report, ok bool, err error) {
	st := b.plan
	if st == nil || opt.Strict || pol != b.pol || !st.sameInput(flows) {
		return rep, false, nil
	}
	planPol, note, err := b.resolve(pol)
	if err != nil {
		return rep, false, nil // the full plan reports it
	}
	if checked, _, valid := CheckPolicy(planPol); !valid || checked != st.pol {
		return rep, false, nil // e.g. the device's packet overhead changed
	}
	tree := st.desired()
	keys := b.rec.keyCheck(tree)
	if keys.kind != st.keys.kind || (keys.kn == nil) != (st.keys.kn == nil) {
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
		st.setDeviceProblems(linkProblems(link))
	}
	rep.Problems, _ = st.allProblems()
	b.requestSpares()
	return rep, true, nil
}
