package htb

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
)

// UnreachableProblems warns about every flow class of t whose flow lacks
// the key classifier c binds by: the class exists and its GBR stays
// reserved, but no packet can reach it. Only the backend can tell, since
// the key depends on the classifier (a mark for fw and bpf, a TEID for
// the GTP-U classifier). A classifier that cannot tell gives none.
func UnreachableProblems(t *Tree, c classify.Classifier) []shaper.Problem {
	kn, ok := c.(classify.KeyNeeder)
	if t == nil || !ok {
		return nil
	}
	kind := t.Classifier
	if kind == "" {
		kind = c.Kind()
	}
	var out []shaper.Problem
	for _, cl := range t.Classes {
		if cl.Role != shaper.RoleFlow {
			continue
		}
		field := kn.MissingKey(classify.Entry{ClassID: t.ClassID(cl.Minor), Flow: cl.Flow, Mark: cl.Mark, TEID: cl.TEID, QFI: cl.QFI})
		if field == "" {
			continue
		}
		kept := fmt.Sprintf("its class keeps its rate %s", shaper.FormatRate(cl.Rate))
		if cl.GBR != 0 {
			kept = fmt.Sprintf("its GBR %s stays reserved", shaper.FormatRate(cl.GBR))
		}
		out = append(out, shaper.Problem{Kind: shaper.Unreachable, Severity: shaper.Warning, Flow: cl.Flow,
			Name: shaper.Flow{ID: cl.Flow, Name: cl.Name}.Label(), Field: field,
			Detail: fmt.Sprintf("no %s: classifier %s binds by %s and cannot steer its packets into class %s, they go to the default class; %s",
				field, kind, field, t.Handle(cl.Minor), kept)})
	}
	return out
}

// ClassifierFor returns the classifier a plan for kind k is enforced by
// (auto: a mark classifier, as both it can pick are), for
// UnreachableProblems on a plan made without a device.
func ClassifierFor(k shaper.ClassifierKind) classify.Classifier {
	if k == shaper.KindBPF {
		return classify.NewMarkBPF()
	}
	return classify.NewFw()
}

// plannedClassifier is the classifier a Reconcile of desired will use, as
// far as it is known before reading the device: one given, else the kind
// asked for (auto: either mark classifier, which need the same key).
func (r *Reconciler) plannedClassifier(desired *Tree) classify.Classifier {
	if r.cls != nil {
		return r.cls
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

// warnings are the problems only the backend can see in a plan for its
// device: flows its classifier cannot reach, and a device that is down.
func (b *Backend) warnings(tree *Tree) []shaper.Problem {
	if tree == nil {
		return nil
	}
	out := UnreachableProblems(tree, b.rec.plannedClassifier(tree))
	if link, err := b.h.LinkByName(b.dev); err == nil {
		out = append(out, linkProblems(link)...)
	}
	return out
}
