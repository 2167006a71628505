package gtpu

import (
	"slices"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/bpf"
	"github.com/free5gc/gtpqos/shaper/classify"
)

// SetSDF gives the classifier the SDF rules of every session's PDRs on N3
// (qosview.SDFRules). A TEID with rules is classified by matching the
// inner packet against them in order, whatever QFI the wire carries; one
// without, by (TEID, QFI). With objects loaded the rule maps change at
// once (class ids and marks from the last Sync); otherwise at the first
// Sync.
func (c *Classifier) SetSDF(rules []shaper.SessionRules) (classify.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sdf = slices.Clone(rules)
	var res classify.Result
	if c.objs == nil {
		return res, nil
	}
	for _, d := range []shaper.Direction{shaper.Downlink, shaper.Uplink} {
		if _, ok := c.ents[d]; !ok {
			continue // that view has not synced yet
		}
		if err := c.syncRules(d, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// setEntries records the entries a direction's map now holds.
func (c *Classifier) setEntries(d shaper.Direction, es []classify.Entry) {
	m := make(map[shaper.FlowID]classify.Entry, len(es))
	for _, e := range es {
		m[e.Flow] = e
	}
	c.ents[d] = m
}

// patchEntries applies a Patch's del and put to the recorded entries.
func (c *Classifier) patchEntries(d shaper.Direction, del, put []classify.Entry) {
	m := c.ents[d]
	if m == nil {
		m = map[shaper.FlowID]classify.Entry{}
		c.ents[d] = m
	}
	for _, e := range del {
		delete(m, e.Flow)
	}
	for _, e := range put {
		m[e.Flow] = e
	}
}

// syncRules writes the direction's rule map from the SDF rules and the
// recorded entries.
func (c *Classifier) syncRules(d shaper.Direction, res *classify.Result) error {
	value := func(e classify.Entry) uint32 { return e.ClassID }
	t := &c.objs.dlr
	if d == shaper.Uplink {
		value = func(e classify.Entry) uint32 { return e.Mark }
		t = &c.objs.ulr
	}
	want, notes := compileRules(c.sdf, d, c.ents[d], value)
	res.Notes = append(res.Notes, notes...)
	s, err := t.sync(want)
	addSync(res, s)
	return err
}

// compileRules builds TEID -> rules for direction d (bpf.CompileSDF). A
// rule's value is its flow's (value(entry)), 0 when its flow has no entry
// here (the default class; unmarked uplink).
func compileRules(all []shaper.SessionRules, d shaper.Direction, ents map[shaper.FlowID]classify.Entry, value func(classify.Entry) uint32) (map[uint32]bpf.SDFRules, []string) {
	return bpf.CompileSDF(all, d, func(id shaper.FlowID) uint32 {
		if e, ok := ents[id]; ok && id != (shaper.FlowID{}) {
			return value(e)
		}
		return 0
	})
}
