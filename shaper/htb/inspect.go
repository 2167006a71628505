package htb

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

func (r *Reconciler) actual(ctx context.Context) (*plan.Tree, error) {
	link, err := r.link()
	if err != nil {
		return nil, err
	}
	st, err := r.readQdiscs(link)
	if err != nil {
		return nil, err
	}
	if !st.owned {
		if st.root != nil && st.root.Attrs().Handle != 0 {
			return nil, r.foreignErr(st.root)
		}
		return nil, nil
	}
	hs, err := r.listClasses(link, 0)
	if err != nil {
		return nil, err
	}
	t := &plan.Tree{Major: plan.OwnedMajor, DefaultMinor: uint16(st.root.(*netlink.Htb).Defcls), Leaf: plan.LeafSpec{Kind: plan.LeafFIFO},
		Accounting: shaper.AccountFrame}
	if st.stab != nil {
		t.Accounting, t.Overhead = shaper.AccountPacket, uint32(max(-st.stab.Overhead, 0))
	}
	hasChild := map[uint16]bool{}
	for _, h := range hs.All() {
		if pmaj, pmin := netlink.MajorMinor(h.parent); pmaj == plan.OwnedMajor && pmin != 0 {
			hasChild[pmin] = true
		}
	}
	for m, h := range hs.All() {
		c := plan.Class{Minor: m, Rate: h.rate * 8, Ceil: h.ceil * 8, Quantum: h.quantum, Prio: h.prio,
			Burst: plan.BufferBytes(h.rate*8, h.buffer), CBurst: plan.BufferBytes(h.ceil*8, h.cbuffer), Overhead: uint32(h.over.rate)}
		if pmaj, pmin := netlink.MajorMinor(h.parent); pmaj == plan.OwnedMajor {
			c.Parent = pmin
		}
		switch {
		case m == plan.LinkMinor:
			c.Role = shaper.RoleLink
			t.LinkRate = c.Rate
		case m == t.DefaultMinor:
			c.Role = shaper.RoleDefault
		case hasChild[m]:
			c.Role = shaper.RoleSession
		default:
			c.Role = shaper.RoleFlow
		}
		t.Classes = append(t.Classes, c)
	}
	t.SortClasses()
	t.Leaf = readLeaf(st.byParent[t.ClassID(t.DefaultMinor)])
	if err := r.readBindings(ctx, link, t); err != nil {
		return nil, err
	}
	for i := range t.Classes {
		if plan.LooksSpare(t.Classes[i]) {
			t.Classes[i].Role = shaper.RoleSpare
		}
	}
	return t, nil
}

// readBindings sets the tree's classifier and its flow classes' keys from
// the first classifier (the one given, else fw, else bpf) that holds
// entries.
func (r *Reconciler) readBindings(ctx context.Context, link netlink.Link, t *plan.Tree) error {
	env := classify.Env{Handle: r.h, Link: link, Root: rootHandle()}
	var cands []classify.Classifier
	if r.opts.Custom != nil {
		cands = append(cands, r.opts.Custom)
	}
	cands = append(cands, r.builtin(classify.KindFw), r.builtin(classify.KindBPF))
	for _, cl := range cands {
		bs, err := cl.Bindings(ctx, env)
		if err != nil {
			return fmt.Errorf("dev %s: read classifier %s: %w", r.dev, cl.Kind(), err)
		}
		if len(bs) == 0 {
			continue
		}
		t.Classifier = cl.Kind()
		idx := map[uint16]int{}
		for i, c := range t.Classes {
			idx[c.Minor] = i
		}
		for _, b := range bs {
			if i, ok := idx[b.Minor]; ok && t.Classes[i].Role == shaper.RoleFlow {
				c := &t.Classes[i]
				c.Mark, c.TEID, c.QFI = b.Mark, b.TEID, b.QFI
			}
		}
		return nil
	}
	// An installed program with an empty map is still the classifier.
	if ok, _ := r.builtin(classify.KindBPF).(*classify.MarkBPF).Installed(env); ok {
		t.Classifier = classify.KindBPF
	}
	return nil
}

func (r *Reconciler) reset(ctx context.Context) error {
	link, err := r.link()
	if err != nil {
		return err
	}
	st, err := r.readQdiscs(link)
	if err != nil {
		return err
	}
	if !st.owned {
		return nil
	}
	env := classify.Env{Handle: r.h, Link: link, Root: rootHandle()}
	if r.opts.Custom != nil {
		n, err := classify.RemoveCounted(ctx, env, r.opts.Custom)
		r.writes += n
		if err != nil {
			return fmt.Errorf("dev %s: remove classifier %s: %w", r.dev, r.opts.Custom.Kind(), err)
		}
	}
	if err := r.do(func() error { return r.h.QdiscDel(st.root) }); err != nil {
		return fmt.Errorf("dev %s: delete root qdisc htb %x: %w", r.dev, plan.OwnedMajor, err)
	}
	// The root took the cls_bpf filter with it; its pins go too.
	if err := classify.RemoveMarkPins(env); err != nil {
		return fmt.Errorf("dev %s: %w", r.dev, err)
	}
	for _, c := range r.classCache {
		if m, ok := c.(*classify.MarkBPF); ok {
			m.Close()
		}
	}
	return nil
}

func (r *Reconciler) classStats(ctx context.Context) (map[uint32]ClassStats, error) {
	link, err := r.link()
	if err != nil {
		return nil, err
	}
	c, err := r.tc(link)
	if err != nil {
		return nil, err
	}
	out := map[uint32]ClassStats{}
	err = eachClassCounters(c, link.Attrs().Index, func(minor uint16, cc shaper.Counters) {
		id := netlink.MakeHandle(plan.OwnedMajor, minor)
		out[id] = ClassStats{ClassID: id, Minor: minor, Bytes: cc.Bytes, Packets: cc.Packets, Drops: uint32(cc.Drops),
			Overlimits: uint32(cc.Overlimits), Backlog: uint32(cc.Backlog), Qlen: uint32(cc.Qlen)}
	})
	if err != nil {
		return nil, fmt.Errorf("dev %s: list classes: %w", r.dev, err)
	}
	return out, nil
}
