package gtpu

import (
	"context"
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
)

// Uplink returns the classify.Classifier for the N6 Reconciler: gtpu_ingress
// on N3's clsact ingress sets skb->mark from (TEID, QFI) before gtp5g
// decapsulates, and mark_egress on N6's clsact egress turns the mark into
// skb->priority = the flow's class id (no cls_fw needed). Flows without a
// mark or TEID reach the default class.
func (c *Classifier) Uplink() classify.Classifier { return uplink{c: c} }

// UplinkMarker returns the uplink half without its N6 program: gtpu_ingress
// on N3 marks each uplink packet with its flow's mark from (TEID, QFI) and
// the session's SDF rules, and the N6 device's own program (the edt
// pacer's) finds the flow by that mark. Its Sync writes no mark -> class
// map and attaches nothing to the device it is given; an entry's ClassID
// only orders and names it in notes.
func (c *Classifier) UplinkMarker() classify.Classifier { return uplink{c: c, markOnly: true} }

type uplink struct {
	c        *Classifier
	markOnly bool // no mark_egress on the N6 device (UplinkMarker)
}

// Kind returns classify.KindGTPU.
func (u uplink) Kind() classify.Kind { return classify.KindGTPU }

// Ready implements classify.Readier, as the downlink half does.
func (u uplink) Ready(string) error { return u.c.ready() }

// Probe loads the objects: the kernel must accept the programs.
func (u uplink) Probe(ctx context.Context, env classify.Env) error {
	u.c.mu.Lock()
	defer u.c.mu.Unlock()
	n3, err := u.c.n3Link(env)
	if err != nil {
		return err
	}
	_, err = u.c.load(n3)
	return err
}

// Sync writes (TEID, QFI) -> mark and mark -> class id for every flow class
// of the table that has a mark, deletes stale keys and attaches both programs.
func (u uplink) Sync(ctx context.Context, env classify.Env, table classify.Table) (classify.Result, error) {
	u.c.mu.Lock()
	defer u.c.mu.Unlock()
	c := u.c
	var res classify.Result
	n3, err := c.n3Link(env)
	if err != nil {
		return res, err
	}
	loaded, err := c.load(n3)
	if err != nil {
		return res, err
	}
	if loaded {
		res.Writes++
		res.Notes = append(res.Notes, "loaded BPF programs gtpu_ingress ((TEID, QFI) -> skb->mark) and mark_egress (mark -> skb->priority)")
	}
	want, notes := c.entries(table, func(e classify.Entry) (uint32, bool) {
		if e.Mark == 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("flow %s (class %s): no mark; its packets go to the default class", e.Flow, classify.Handle(e.ClassID)))
			return 0, false
		}
		return e.Mark, true
	})
	res.Notes = append(res.Notes, notes...)
	marks := map[uint32]uint32{}
	for _, e := range table.Entries {
		if e.Mark != 0 && !u.markOnly {
			if _, dup := marks[e.Mark]; !dup {
				marks[e.Mark] = e.ClassID
			}
		}
	}
	s, err := c.objs.SyncUplink(want)
	addSync(&res, s)
	if err != nil {
		return res, err
	}
	s, err = c.objs.SyncMarkClasses(marks)
	res.Writes += s.Writes()
	if err != nil {
		return res, err
	}
	c.setEntries(shaper.Uplink, table.Entries)
	if err := c.syncRules(shaper.Uplink, &res); err != nil {
		return res, err
	}
	if err := c.attachNoting(env, n3, Ingress, "gtpu-ingress", &res); err != nil {
		return res, err
	}
	if u.markOnly {
		return res, nil
	}
	err = c.attachNoting(env, env.Link, Egress, "mark-egress", &res)
	return res, err
}

// Bindings reads the uplink maps back: (TEID, QFI) -> mark -> class.
// Before the first Sync it reads the maps of a mark_egress program an
// earlier run left attached to the device, joined with those of the
// gtpu_ingress program on N3 (when the Classifier knows N3).
func (u uplink) Bindings(ctx context.Context, env classify.Env) ([]classify.Binding, error) {
	u.c.mu.Lock()
	defer u.c.mu.Unlock()
	s, err := u.c.snapshot(env, env.Link, Egress)
	if s == nil || err != nil {
		return nil, err
	}
	if len(s.Uplink) == 0 && u.c.objs == nil && u.c.opts.N3 != "" && u.c.opts.N3 != env.Link.Attrs().Name {
		// mark_egress reads no (TEID, QFI) map: take gtpu_ingress's on N3.
		n3, err := u.c.n3Link(env)
		if err != nil {
			return nil, err
		}
		in, err := ReadAttached(env.Handle, n3, Ingress)
		if err != nil {
			return nil, err
		}
		if in != nil {
			s.Uplink = in.Uplink
		}
	}
	return s.UplinkBindings(env.Root), nil
}

// Remove detaches gtpu_ingress from N3 and mark_egress from the device.
func (u uplink) Remove(ctx context.Context, env classify.Env) error {
	u.c.mu.Lock()
	defer u.c.mu.Unlock()
	n3, err := u.c.n3Link(env)
	if err != nil {
		return err
	}
	if err := u.c.detach(env, n3, Ingress, "gtpu-ingress"); err != nil {
		return err
	}
	if u.markOnly {
		return nil
	}
	return u.c.detach(env, env.Link, Egress, "mark-egress")
}

// Patch deletes the uplink entries of del ((TEID, QFI) -> mark and mark ->
// class) and writes those of put, on the objects an earlier Sync loaded.
func (u uplink) Patch(ctx context.Context, env classify.Env, del, put []classify.Entry) (classify.Result, error) {
	u.c.mu.Lock()
	defer u.c.mu.Unlock()
	var res classify.Result
	if u.c.objs == nil {
		return res, fmt.Errorf("gtpu classifier not loaded: full sync needed")
	}
	var delKeys []Key
	var delMarks []uint32
	for _, e := range del {
		if k, note := u.c.keyOf(e); note == "" && e.Mark != 0 {
			delKeys = append(delKeys, k)
		}
		if e.Mark != 0 {
			delMarks = append(delMarks, e.Mark)
		}
	}
	want, notes := u.c.entries(classify.Table{Entries: put}, func(e classify.Entry) (uint32, bool) { return e.Mark, e.Mark != 0 })
	res.Notes = append(res.Notes, notes...)
	marks := map[uint32]uint32{}
	for _, e := range put {
		if e.Mark != 0 {
			marks[e.Mark] = e.ClassID
		}
	}
	s, err := u.c.objs.PatchUplink(delKeys, want)
	addSync(&res, s)
	if err != nil {
		return res, err
	}
	s, err = u.c.objs.PatchMarkClasses(delMarks, marks)
	addSync(&res, s)
	if err != nil {
		return res, err
	}
	u.c.patchEntries(shaper.Uplink, del, put)
	err = u.c.syncRules(shaper.Uplink, &res)
	return res, err
}

// MissingKey implements classify.KeyNeeder: an uplink flow is marked by
// (TEID, QFI) on N3 ingress and classified by that mark on N6 egress, so
// it needs both.
func (u uplink) MissingKey(e classify.Entry) string {
	if k := u.c.missingTEID(e); k != "" {
		return k
	}
	if e.Mark == 0 {
		return "mark"
	}
	return ""
}
