package htb

import (
	"context"
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// classState converts a class of t to the model's form.
func classState(t *plan.Tree, c plan.Class) shaper.ClassState {
	cs := shaper.ClassState{Handle: t.Handle(c.Minor), Role: c.Role, Flow: c.Flow, Name: c.Name, GBR: c.GBR, MBR: c.MBR,
		Key: c.Key(), Rate: c.Rate, Ceil: c.Ceil}
	if c.Parent != 0 {
		cs.Parent = t.Handle(c.Parent)
	}
	if c.Role == shaper.RoleSession {
		cs.SEID = c.SEID
	}
	return cs
}

// classStates converts every class of t.
func classStates(t *plan.Tree) []shaper.ClassState {
	out := make([]shaper.ClassState, 0, len(t.Classes))
	for _, c := range t.Classes {
		out = append(out, classState(t, c))
	}
	return out
}

// changes lists what a reconcile wrote, one entry per class created,
// changed or deleted (named from the new tree, or the old one for
// deletions), plus one for the root and one for the classifier.
func changes(res Result, tree, prev *plan.Tree) []shaper.Change {
	var out []shaper.Change
	if res.CreatedRoot {
		out = append(out, shaper.Change{Op: "add", Object: "qdisc", Class: tree.Handle(0),
			Detail: fmt.Sprintf("root htb, link %s", shaper.FormatRate(tree.LinkRate))})
	}
	class := func(op string, t *plan.Tree, minor uint16) shaper.Change {
		c := shaper.Change{Op: op, Object: "class", Class: fmt.Sprintf("%x:%x", plan.OwnedMajor, minor)}
		if t == nil {
			return c
		}
		cl, ok := t.Find(minor)
		if !ok {
			return c
		}
		c.Role, c.Flow, c.Name, c.QFI, c.Rate, c.Ceil = cl.Role, cl.Flow, cl.Name, cl.QFI, cl.Rate, cl.Ceil
		if cl.Role == shaper.RoleSession {
			c.Flow = shaper.FlowID{SEID: cl.SEID}
		}
		c.Detail = cl.Role.String()
		if op != "delete" {
			c.Detail = fmt.Sprintf("%s rate %s ceil %s", cl.Role, shaper.FormatRate(cl.Rate), shaper.FormatRate(cl.Ceil))
		}
		return c
	}
	for _, m := range res.Created {
		out = append(out, class("add", tree, m))
	}
	for _, m := range res.Changed {
		out = append(out, class("change", tree, m))
	}
	for _, m := range res.Deleted {
		out = append(out, class("delete", prev, m))
	}
	cr := res.Classifier
	if n := cr.Added + cr.Changed + cr.Deleted; n > 0 {
		out = append(out, shaper.Change{Op: "sync", Object: string(res.ClassifierKind),
			Detail: fmt.Sprintf("classifier entries added %d, changed %d, deleted %d", cr.Added, cr.Changed, cr.Deleted)})
	}
	return out
}

// Inspect implements shaper.Backend: the tree under the owned root with
// each flow class's classifier key and counters, and the GTP-U programs on
// the device's clsact hooks. Without a classifier given at Open, an
// attached GTP-U program decides which one reads the bindings.
func (b *Backend) Inspect(ctx context.Context) (*shaper.Inspection, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	in := &shaper.Inspection{Dev: b.dev, Backend: Name}
	link, err := b.h.LinkByName(b.dev)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", b.dev, err)
	}
	att, err := gtpu.Inspect(b.h, link)
	if err != nil {
		return nil, err
	}
	in.Attachments = att.Attachments
	rec := b.rec
	if b.opts.Custom == nil {
		if v := att.Egress.View(b.opts.N3); v != nil {
			rec = newReconciler(b.h, b.dev, Options{Custom: v, NetNS: b.opts.NetNS}, b.raw)
		}
	}
	t, err := rec.Actual(ctx)
	if err != nil || t == nil {
		return in, err
	}
	stats, err := rec.ClassStats(ctx)
	if err != nil {
		return nil, err
	}
	in.Owned, in.Root = true, fmt.Sprintf("%x:", t.Major)
	in.Classifier, in.Leaf, in.Default = string(t.Classifier), string(t.Leaf.Kind), t.Handle(t.DefaultMinor)
	in.Accounting, in.Overhead = t.Accounting, t.Overhead
	ids := make(map[uint32]bool, len(t.Classes))
	for _, c := range t.Classes {
		cs := classState(t, c)
		cs.Counters = stats[t.ClassID(c.Minor)].counters()
		in.Classes = append(in.Classes, cs)
		ids[t.ClassID(c.Minor)] = true
	}
	if att.Egress != nil {
		in.Unplaced = att.Egress.Unplaced()
		in.Problems = att.Egress.Dangling(b.dev, t.ClassID(0), ids)
	}
	foreign, err := rec.foreignFilterProblems()
	if err != nil {
		return nil, err
	}
	in.Problems = append(in.Problems, foreign...)
	return in, nil
}

// deltaChanges lists what an incremental update wrote, one entry per class
// created, changed or deleted, plus one for the classifier's entries.
func deltaChanges(d *plan.Delta, kind classify.Kind) []shaper.Change {
	t := &plan.Tree{Major: plan.OwnedMajor}
	var out []shaper.Change
	class := func(op string, c plan.Class) shaper.Change {
		ch := shaper.Change{Op: op, Object: "class", Class: t.Handle(c.Minor), Role: c.Role, Flow: c.Flow, Name: c.Name, QFI: c.QFI,
			Rate: c.Rate, Ceil: c.Ceil, Detail: fmt.Sprintf("%s rate %s ceil %s", c.Role, shaper.FormatRate(c.Rate), shaper.FormatRate(c.Ceil))}
		if c.Role == shaper.RoleSession {
			ch.Flow = shaper.FlowID{SEID: c.SEID}
		}
		return ch
	}
	for _, c := range d.Create {
		out = append(out, class("add", c))
	}
	for _, c := range d.Change {
		out = append(out, class("change", c))
	}
	for _, m := range d.Del {
		out = append(out, shaper.Change{Op: "delete", Object: "class", Class: t.Handle(m)})
	}
	if n := len(d.Bind) + len(d.Unbind); n > 0 {
		out = append(out, shaper.Change{Op: "sync", Object: string(kind),
			Detail: fmt.Sprintf("classifier entries bound %d, unbound %d", len(d.Bind), len(d.Unbind))})
	}
	return out
}
