package htb

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// UnreachableProblems warns about every flow class of t whose flow lacks
// the key classifier c binds by: the class exists and its GBR stays
// reserved, but no packet can reach it. Only the backend can tell, since
// the key depends on the classifier (a mark for fw and bpf, a TEID for
// the GTP-U classifier). A classifier that cannot tell gives none.
func UnreachableProblems(t *plan.Tree, c classify.Classifier) []shaper.Problem {
	return newKeyCheck(t, c).Problems(t)
}

// newKeyCheck is the check for t's flows bound by c (t's classifier kind
// names it in warnings, else c's).
func newKeyCheck(t *plan.Tree, c classify.Classifier) plan.KeyCheck {
	kn, ok := c.(classify.KeyNeeder)
	if t == nil || !ok {
		return plan.KeyCheck{}
	}
	kind := t.Classifier
	if kind == "" {
		kind = c.Kind()
	}
	return plan.KeyCheck{KN: kn, Kind: kind}
}

// ClassifierFor returns the classifier a plan for kind k is enforced by
// (auto: a mark classifier, as both it can pick are), for
// UnreachableProblems on a plan made without a device.
func ClassifierFor(k classify.Kind) classify.Classifier {
	if k == classify.KindBPF {
		return classify.NewMarkBPF()
	}
	return classify.NewFw()
}

// plannedClassifier is the classifier a Reconcile of desired will use, as
// far as it is known before reading the device: one given, else the kind
// asked for (auto: either mark classifier, which need the same key).
func (r *Reconciler) plannedClassifier(desired *plan.Tree) classify.Classifier {
	if r.opts.Custom != nil {
		return r.opts.Custom
	}
	return ClassifierFor(r.requestedKind(desired.Classifier))
}

// linkProblems warns when the device is down: the tree is installed all
// the same (an operator may set a device up after provisioning it), but it
// shapes nothing until then.
func linkProblems(link netlink.Link) []shaper.Problem {
	a := link.Attrs()
	var detail string
	switch {
	case a.Flags&net.FlagUp == 0:
		detail = "device is down (administratively): the tree is installed and shapes once the device is up"
	case a.OperState == netlink.OperDown || a.OperState == netlink.OperLowerLayerDown:
		detail = fmt.Sprintf("device has no carrier (operstate %s): the tree is installed and shapes once the link is up", a.OperState)
	default:
		return nil
	}
	return []shaper.Problem{{Kind: shaper.DeviceDown, Severity: shaper.Warning, Name: "dev " + a.Name, Field: "state", Detail: detail}}
}

// keyCheck is the unreachable-flow check for a plan of this device.
func (r *Reconciler) keyCheck(tree *plan.Tree) plan.KeyCheck {
	if tree == nil {
		return plan.KeyCheck{}
	}
	return newKeyCheck(tree, r.plannedClassifier(tree))
}

// warnings are the problems only the backend can see in a plan for its
// device: flows its classifier cannot reach (kc), and a device that is
// down.
func (b *Backend) warnings(tree *plan.Tree, kc plan.KeyCheck) []shaper.Problem {
	if tree == nil {
		return nil
	}
	out := kc.Problems(tree)
	if link, err := b.h.LinkByName(b.dev); err == nil {
		out = append(out, linkProblems(link)...)
	}
	return out
}
