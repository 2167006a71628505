package edt

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/free5gc/gtpqos/shaper/bpf"
)

// Rules are the SDF rules of the session whose packets carry one TEID, in
// gtp5g's order, each rule's Value a flow id (0: none; the default class):
// the layout the gtpu classifier's rule maps have (bpf.CompileSDF builds
// it). An unmarked GTP-U packet whose TEID has rules is found by the first
// rule its inner packet matches, whatever QFI the wire carries; one
// matching none, or whose TEID has none, by its (TEID, QFI).
type Rules = bpf.SDFRules

// SetRules writes teid's rules (a new entry or a rewrite).
func (p *Pacer) SetRules(teid uint32, r Rules) error {
	if p.objs.Rules == nil {
		return fmt.Errorf("edt: TEID %d: this program has no SDF rule map (pinned by an older gtpqos)", teid)
	}
	if err := p.objs.Rules.Put(teid, &r); err != nil {
		return fmt.Errorf("edt: map rules: set TEID %d: %w", teid, mapFull(err))
	}
	return nil
}

// RemoveRules deletes teid's rules; rules already gone are not an error.
func (p *Pacer) RemoveRules(teid uint32) error {
	if p.objs.Rules == nil {
		return nil
	}
	if err := p.objs.Rules.Delete(teid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("edt: map rules: delete TEID %d: %w", teid, err)
	}
	return nil
}

// ReadRules returns every TEID's rules the map holds.
func (p *Pacer) ReadRules() (map[uint32]Rules, error) {
	out := map[uint32]Rules{}
	if p.objs.Rules == nil {
		return out, nil
	}
	var teid uint32
	var r Rules
	it := p.objs.Rules.Iterate()
	for it.Next(&teid, &r) {
		out[teid] = r
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("edt: map rules: read: %w", err)
	}
	return out, nil
}
