package gtpu

import (
	"context"
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
)

// Downlink returns the classify.Classifier for the N3 Reconciler: gtpu_egress
// on the device's clsact egress sets skb->priority to the flow's class id,
// and unclaimed GTP-U to the default class.
func (c *Classifier) Downlink() classify.Classifier { return downlink{c} }

type downlink struct{ c *Classifier }

// Kind returns classify.KindGTPU.
func (d downlink) Kind() classify.Kind { return classify.KindGTPU }

// Ready implements classify.Readier: the programs must load (the
// capabilities they need, the verifier), before the tree is written.
func (d downlink) Ready(string) error { return d.c.ready() }

// Probe loads the objects: the kernel must accept the program.
func (d downlink) Probe(ctx context.Context, env classify.Env) error {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	_, err := d.c.load(env.Link)
	return err
}

// Sync writes (TEID, QFI) -> class id for every entry of the table,
// deletes stale keys, sets the default class and attaches the program.
func (d downlink) Sync(ctx context.Context, env classify.Env, table classify.Table) (classify.Result, error) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	c := d.c
	var res classify.Result
	loaded, err := c.load(env.Link)
	if err != nil {
		return res, err
	}
	if loaded {
		res.Writes++
		res.Notes = append(res.Notes, "loaded BPF program gtpu_egress ((TEID, QFI) -> skb->priority)")
	}
	want, notes := c.entries(table, func(e classify.Entry) (uint32, bool) { return e.ClassID, true })
	res.Notes = append(res.Notes, notes...)
	s, err := c.objs.SyncDownlink(want)
	addSync(&res, s)
	if err != nil {
		return res, err
	}
	c.setEntries(shaper.Downlink, table.Entries)
	if err := c.syncRules(shaper.Downlink, &res); err != nil {
		return res, err
	}
	dflt := table.Default
	if dflt != c.objs.dflt {
		if err := c.objs.SetDefaultClass(dflt); err != nil {
			return res, err
		}
		res.Writes++
	}
	err = c.attachNoting(env, env.Link, Egress, "gtpu-egress", &res)
	return res, err
}

// Bindings reads the downlink map back: this process's, or before the first
// Sync the map of a gtpu_egress program an earlier run left attached.
func (d downlink) Bindings(ctx context.Context, env classify.Env) ([]classify.Binding, error) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	s, err := d.c.snapshot(env, env.Link, Egress)
	if s == nil || err != nil {
		return nil, err
	}
	return s.DownlinkBindings(env.Root), nil
}

// Remove detaches gtpu_egress from the device (and the clsact qdisc if we
// added it and nothing else uses it). The map entries go with the objects.
func (d downlink) Remove(ctx context.Context, env classify.Env) error {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	return d.c.detach(env, env.Link, Egress, "gtpu-egress")
}

// Patch deletes the (TEID, QFI) keys of del and writes those of put, on the
// objects an earlier Sync loaded.
func (d downlink) Patch(ctx context.Context, env classify.Env, del, put []classify.Entry) (classify.Result, error) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	var res classify.Result
	if d.c.objs == nil {
		return res, fmt.Errorf("gtpu classifier not loaded: full sync needed")
	}
	var delKeys []Key
	for _, e := range del {
		if k, note := d.c.keyOf(e); note == "" {
			delKeys = append(delKeys, k)
		}
	}
	want, notes := d.c.entries(classify.Table{Entries: put}, func(e classify.Entry) (uint32, bool) { return e.ClassID, true })
	res.Notes = append(res.Notes, notes...)
	s, err := d.c.objs.PatchDownlink(delKeys, want)
	addSync(&res, s)
	if err != nil {
		return res, err
	}
	d.c.patchEntries(shaper.Downlink, del, put)
	err = d.c.syncRules(shaper.Downlink, &res)
	return res, err
}

// MissingKey implements classify.KeyNeeder: downlink packets are bound by
// (TEID, QFI) (by QFI alone in QFI-only mode).
func (d downlink) MissingKey(e classify.Entry) string { return d.c.missingTEID(e) }
