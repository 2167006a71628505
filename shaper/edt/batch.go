package edt

import (
	"fmt"
)

// batchChunk is how many entries one batch syscall writes: large enough to
// amortise the syscall, small enough that a failing chunk is named.
const batchChunk = 1 << 16

// Session is one PDU session for AddSessions.
type Session struct {
	ID   uint32
	AMBR uint64 // bit/s, 0: no AMBR clock
}

// Flow is one flow for AddFlows.
type Flow struct {
	ID   uint32
	Spec FlowSpec
}

// AddSessions writes many sessions with batch updates (BPF_MAP_UPDATE_BATCH):
// the way to build a large table from empty. Every entry is checked before
// the first write; an id already in the map is overwritten.
func (p *Pacer) AddSessions(ss []Session) error {
	keys := make([]uint32, len(ss))
	vals := make([]edtSession, len(ss))
	for i, s := range ss {
		if s.ID == 0 {
			return fmt.Errorf("edt: sessions[%d]: session id 0 is reserved for flows without a session", i)
		}
		keys[i], vals[i] = s.ID, p.sessionValue(s.AMBR)
	}
	return batch("sessions", p.objs.Sessions.BatchUpdate, keys, vals)
}

// AddFlows writes many flows, then their marks and keys, with batch updates. Every
// spec is checked before the first write; ids and marks already in the
// maps are overwritten.
func (p *Pacer) AddFlows(fs []Flow) error {
	keys := make([]uint32, len(fs))
	vals := make([]edtFlow, len(fs))
	var marks, ids, kids []uint32
	var fkeys []edtFlowKey
	for i, f := range fs {
		if err := f.Spec.check(f.ID); err != nil {
			return err
		}
		keys[i], vals[i] = f.ID, f.Spec.value(f.ID, p.opts.Burst)
		for _, m := range f.Spec.Marks {
			marks = append(marks, m)
			ids = append(ids, f.ID)
		}
		for _, k := range f.Spec.Keys {
			fkeys = append(fkeys, k.mapKey())
			kids = append(kids, f.ID)
		}
	}
	if len(fkeys) > 0 && p.objs.Teids == nil {
		return fmt.Errorf("edt: this program has no (TEID, QFI) map (pinned by an older gtpqos)")
	}
	if err := batch("flows", p.objs.Flows.BatchUpdate, keys, vals); err != nil {
		return err
	}
	if err := batch("marks", p.objs.Marks.BatchUpdate, marks, ids); err != nil {
		return err
	}
	if len(fkeys) == 0 {
		return nil
	}
	return batch("teids", p.objs.Teids.BatchUpdate, fkeys, kids)
}

type batchFunc func(keys, values any, opts *ebpfBatchOptions) (int, error)

func batch[K, V any](name string, update batchFunc, keys []K, vals []V) error {
	for lo := 0; lo < len(keys); lo += batchChunk {
		hi := min(lo+batchChunk, len(keys))
		if _, err := update(keys[lo:hi], vals[lo:hi], nil); err != nil {
			return fmt.Errorf("edt: map %s: batch update of entries %d..%d (key %v first): %w", name, lo, hi-1, keys[lo], mapFull(err))
		}
	}
	return nil
}
