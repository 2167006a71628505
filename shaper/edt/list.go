package edt

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cilium/ebpf"
)

// What a backend reads back to bring the maps to a desired set with the
// fewest writes (and to adopt them after a restart: the maps are the only
// state).

// FlowInfo is one flow as the maps hold it.
type FlowInfo struct {
	// Spec is the flow's configuration; GBRBurst is left 0 (the map holds
	// it as a time, compare with Matches).
	Spec FlowSpec
	// State is its clocks and counters.
	State FlowState
	cfg   edtFlow
}

// Matches reports whether the flow's configuration is what s (for flow id)
// would write, marks included (in any order).
func (fi FlowInfo) Matches(id uint32, s FlowSpec) bool {
	if !sameMarks(fi.Spec.Marks, s.Marks) || !SameKeys(fi.Spec.Keys, s.Keys) {
		return false
	}
	a, b := fi.cfg, s.value(id, 0) // the credits follow from the rates and the program's burst
	return a.Session == b.Session && a.MbrBps == b.MbrBps && a.GbrBps == b.GbrBps && a.BudgetNs == b.BudgetNs &&
		a.GbrBurstNs == b.GbrBurstNs && a.ClassId == b.ClassId && a.GbrClassId == b.GbrClassId && a.Hash == b.Hash && a.Flags == b.Flags
}

func sameMarks(a, b []uint32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// SameKeys reports whether a and b hold the same keys, in any order.
func SameKeys(a, b []Key) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, compareKeys)
	slices.SortFunc(b, compareKeys)
	return slices.Equal(a, b)
}

func compareKeys(a, b Key) int {
	if a.TEID != b.TEID {
		return cmp.Compare(a.TEID, b.TEID)
	}
	return cmp.Compare(a.QFI, b.QFI)
}

// ReadFlows returns every flow in the maps with its marks and keys. Counters are
// read without the flow's lock (a scrape may see a packet's bytes without
// its count).
func (p *Pacer) ReadFlows() (map[uint32]FlowInfo, error) {
	out, err := p.ReadFlowsOnly()
	if err != nil {
		return nil, err
	}
	var mark, fid uint32
	mit := p.objs.Marks.Iterate()
	for mit.Next(&mark, &fid) {
		if fi, ok := out[fid]; ok {
			fi.Spec.Marks = append(fi.Spec.Marks, mark)
			out[fid] = fi
		}
	}
	if err := mit.Err(); err != nil {
		return nil, fmt.Errorf("edt: map marks: read: %w", err)
	}
	if p.objs.Teids == nil {
		return out, nil
	}
	var k edtFlowKey
	kit := p.objs.Teids.Iterate()
	for kit.Next(&k, &fid) {
		if fi, ok := out[fid]; ok {
			fi.Spec.Keys = append(fi.Spec.Keys, Key{TEID: k.Teid, QFI: k.Qfi})
			out[fid] = fi
		}
	}
	if err := kit.Err(); err != nil {
		return nil, fmt.Errorf("edt: map teids: read: %w", err)
	}
	return out, nil
}

// ReadFlowsOnly is ReadFlows without the flows' marks and keys: one walk
// of the flows map, so the counters are read within the shortest time
// (what a rate measured between two readings needs).
func (p *Pacer) ReadFlowsOnly() (map[uint32]FlowInfo, error) {
	out := map[uint32]FlowInfo{}
	var id uint32
	var v edtFlow
	it := p.objs.Flows.Iterate()
	for it.Next(&id, &v) {
		out[id] = FlowInfo{cfg: v, Spec: FlowSpec{Session: v.Session, GBR: v.GbrBps, MBR: v.MbrBps,
			DelayBudget: time.Duration(v.BudgetNs), Class: v.ClassId, GBRClass: v.GbrClassId, Hash: v.Hash},
			State: FlowState{MBRClock: v.MbrClock, GBRClock: v.GbrClock, Packets: v.Pkts, Bytes: v.Bytes,
				GBRPackets: v.GbrPkts, GBRBytes: v.GbrBytes, Drops: v.Drops, DropBytes: v.DropBytes}}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("edt: map flows: read: %w", err)
	}
	return out, nil
}

// ReadSessions returns every session's AMBR (bit/s) by id.
func (p *Pacer) ReadSessions() (map[uint32]uint64, error) {
	out := map[uint32]uint64{}
	var id uint32
	var v edtSession
	it := p.objs.Sessions.Iterate()
	for it.Next(&id, &v) {
		out[id] = v.AmbrBps
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("edt: map sessions: read: %w", err)
	}
	return out, nil
}

// SetSessionAMBR changes a session's AMBR in place (under its lock); its
// clock starts again from now.
func (p *Pacer) SetSessionAMBR(id uint32, ambr uint64) error {
	v := p.sessionValue(ambr)
	if err := p.objs.Sessions.Update(id, &v, ebpf.UpdateExist|ebpf.UpdateLock); err != nil {
		return fmt.Errorf("edt: map sessions: set session %d AMBR: %w", id, err)
	}
	return nil
}

// DefaultClass returns the class id unknown marks go to (0: none).
func (p *Pacer) DefaultClass() (uint32, error) {
	var cfg edtEdtConfig
	if err := p.objs.Config.Lookup(uint32(0), &cfg); err != nil {
		return 0, fmt.Errorf("edt: map config: %w", err)
	}
	return cfg.DefaultClass, nil
}
