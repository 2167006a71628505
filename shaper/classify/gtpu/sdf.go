package gtpu

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/free5gc/gtpqos/shaper"
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

// compileRules builds TEID -> rules for direction d. A rule's value is
// its flow's (value(entry)), 0 when its flow has no entry here (the
// default class; unmarked uplink). A TEID listed by two sessions keeps the
// lower SEID's rules; one with more rules than the program walks is left
// out: both are noted, and those TEIDs fall back to (TEID, QFI).
func compileRules(all []shaper.SessionRules, d shaper.Direction, ents map[shaper.FlowID]classify.Entry, value func(classify.Entry) uint32) (map[uint32]gtpuSdfRules, []string) {
	rules := slices.Clone(all)
	slices.SortFunc(rules, func(a, b shaper.SessionRules) int {
		return cmp.Or(cmp.Compare(a.TEID, b.TEID), cmp.Compare(a.SEID, b.SEID))
	})
	out := map[uint32]gtpuSdfRules{}
	owner := map[uint32]uint64{}
	var notes []string
	for _, sr := range rules {
		if sr.Direction != d || sr.TEID == 0 {
			continue
		}
		if o, dup := owner[sr.TEID]; dup {
			notes = append(notes, fmt.Sprintf("%s TEID %d: sessions %d and %d both list it; session %d's SDF rules are used", d, sr.TEID, o, sr.SEID, o))
			continue
		}
		v, err := bpfRules(sr.Rules, d, func(id shaper.FlowID) uint32 {
			if e, ok := ents[id]; ok && id != (shaper.FlowID{}) {
				return value(e)
			}
			return 0
		})
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s TEID %d (session %d): %v; classified by (TEID, QFI)", d, sr.TEID, sr.SEID, err))
			continue
		}
		owner[sr.TEID] = sr.SEID
		out[sr.TEID] = v
	}
	return out, notes
}

// bpfRules lays rules out as the program reads them.
func bpfRules(rs []shaper.SDFRule, d shaper.Direction, value func(shaper.FlowID) uint32) (gtpuSdfRules, error) {
	var out gtpuSdfRules
	if len(rs) > len(out.R) {
		return out, fmt.Errorf("%d SDF rules, the classifier matches at most %d", len(rs), len(out.R))
	}
	for i, r := range rs {
		b := &out.R[i]
		if len(r.SrcPorts) > len(b.Sport) || len(r.DstPorts) > len(b.Dport) {
			return out, fmt.Errorf("PDR %d: more than %d port ranges", r.PDR, len(b.Sport))
		}
		// Addresses keep their wire byte order in memory, as the program
		// compares them.
		b.Src, b.Smask = binary.NativeEndian.Uint32(r.Src[:]), binary.NativeEndian.Uint32(r.SrcMask[:])
		b.Dst, b.Dmask = binary.NativeEndian.Uint32(r.Dst[:]), binary.NativeEndian.Uint32(r.DstMask[:])
		b.Ue = binary.NativeEndian.Uint32(r.UE[:])
		b.Value, b.Proto = value(r.Flow), r.Proto
		if d == shaper.Uplink {
			b.UeIsSrc = 1
		}
		b.Nsport, b.Ndport = uint8(len(r.SrcPorts)), uint8(len(r.DstPorts))
		for j, p := range r.SrcPorts {
			b.Sport[j].Lo, b.Sport[j].Hi = p.Lo, p.Hi
		}
		for j, p := range r.DstPorts {
			b.Dport[j].Lo, b.Dport[j].Hi = p.Lo, p.Hi
		}
	}
	out.N = uint32(len(rs))
	return out, nil
}
