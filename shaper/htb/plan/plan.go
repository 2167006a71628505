package plan

import "github.com/free5gc/gtpqos/shaper"

// Plan turns flows and a policy into the desired tree and a list of
// problems. It is pure and deterministic: the same input gives the same
// output, and it never touches the kernel.
//
// The tree has a link class (LinkMinor, rate = ceil = link) under the root,
// a default class (DefaultMinor) under the link class, optional session
// Classes (one per SEID whose non-GBR flows carry SessionAMBR > 0: rate =
// sum of those flows' rates, ceil = AMBR; their parent, while the session's
// GBR flows stay directly under the link class, TS 23.501), and one leaf
// class per admitted flow with the rates of Policy.FlowRates.
//
// Flows with an Error problem are left out; Warning problems keep the flow.
//
// Under packet accounting (the default) the tree counts the user's packets:
// Tree.Overhead is the policy's fixed overhead, or, when it is auto, that
// of an untagged Ethernet N3 device with an IPv4 tunnel (58 bytes). A
// backend resolves auto from its device before it plans
// (Policy.ResolveOverhead).
//
// prev, if not nil, is the tree of the last plan or the kernel's actual
// tree (Reconciler.Actual). Plan keeps every flow's class id (minor) from
// it: matched by flow id where prev knows it, else by mark or (TEID, QFI)
// (a tree read from the kernel knows only those), and keeps session class
// minors the same way. Flows that have a class in prev are admitted before
// new ones. Without prev, minors are assigned in flow-id order from
// FirstFlowMinor up.
func Plan(flows []shaper.Flow, pol Policy, prev *Tree) (*Tree, []shaper.Problem) {
	pol, problems, ok := CheckPolicy(pol)
	if !ok {
		return nil, problems
	}
	ix := newPrevIndex(prev)
	adm := shaper.Admit(flows, pol.Policy, ix.rank, pol.flowCheck)
	p := &planner{Pol: pol, ix: ix, adm: &adm, problems: append(problems, adm.Problems...)}
	p.assignMinors()
	p.park()
	t := p.build()
	return t, p.problems
}
