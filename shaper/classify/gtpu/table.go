package gtpu

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// SyncResult counts what one sync wrote to a map.
type SyncResult struct {
	// Added is the number of keys written that were absent.
	Added int
	// Changed is the number of keys rewritten with a new value.
	Changed int
	// Deleted is the number of keys removed.
	Deleted int
}

// table mirrors one BPF hash map so a sync touches only changed keys.
type table[K, V comparable] struct {
	m    *ebpf.Map
	name string
	cur  map[K]V
}

func newTable[K, V comparable](m *ebpf.Map, name string) table[K, V] {
	return table[K, V]{m: m, name: name, cur: map[K]V{}}
}

// sync deletes keys not in want and writes keys whose value differs.
// On error the mirror still matches what the kernel map holds.
func (t *table[K, V]) sync(want map[K]V) (SyncResult, error) {
	var res SyncResult
	if max := int(t.m.MaxEntries()); len(want) > max {
		return res, fmt.Errorf("gtpu bpf: map %s: %d entries wanted, room for %d", t.name, len(want), max)
	}
	for k := range t.cur {
		if _, ok := want[k]; ok {
			continue
		}
		if err := t.m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return res, fmt.Errorf("gtpu bpf: map %s: delete %v: %w", t.name, k, err)
		}
		delete(t.cur, k)
		res.Deleted++
	}
	for k, v := range want {
		old, had := t.cur[k]
		if had && old == v {
			continue
		}
		if err := t.m.Put(k, v); err != nil {
			return res, fmt.Errorf("gtpu bpf: map %s: put %v: %w", t.name, k, err)
		}
		t.cur[k] = v
		if had {
			res.Changed++
		} else {
			res.Added++
		}
	}
	return res, nil
}

// patch deletes del's keys and writes put's, keeping the mirror.
func (t *table[K, V]) patch(del []K, put map[K]V) (SyncResult, error) {
	var res SyncResult
	for _, k := range del {
		if err := t.m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return res, fmt.Errorf("gtpu bpf: map %s: delete %v: %w", t.name, k, err)
		}
		delete(t.cur, k)
		res.Deleted++
	}
	for k, v := range put {
		if old, had := t.cur[k]; had && old == v {
			continue
		}
		if err := t.m.Put(k, v); err != nil {
			return res, fmt.Errorf("gtpu bpf: map %s: put %v: %w", t.name, k, err)
		}
		t.cur[k] = v
		res.Added++
	}
	return res, nil
}

// Writes is the number of map writes the sync made.
func (r SyncResult) Writes() int { return r.Added + r.Changed + r.Deleted }
