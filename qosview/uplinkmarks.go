package qosview

import (
	"hash/fnv"
	"slices"
	"sync"

	"github.com/free5gc/gtpqos/shaper"
)

// Stock-mode uplink marks live in [stockMarkBase, stockMarkBase+stockMarkSpan):
// 24-bit values (gtp5g's QoS mark field; bit 31, its framed-route flag, and
// bits 24-30 stay clear) above the small values QFI-style marks use.
const (
	stockMarkBase = 0x100000
	stockMarkSpan = 0xF00000
)

// UplinkMarks gives uplink flows a mark on stock gtp5g, which marks
// nothing: the GTP-U classifier sets it on N3 ingress from (TEID, QFI), and
// the N6 tree classifies the decapsulated packet by it. A flow keeps its
// mark while it exists; a new flow gets a hash of its identity (SEID, QER
// id), probing past marks in use, so the same rule set gets the same marks
// after a restart and the restarted daemon adopts its classes. Flows that
// already carry a mark, and downlink flows (classified by TEID and QFI
// directly), are left alone. It is safe for concurrent use.
type UplinkMarks struct {
	mu     sync.Mutex
	byFlow map[shaper.FlowID]uint32
}

// Assign returns flows with a mark on every uplink flow that had none.
func (s *UplinkMarks) Assign(flows []shaper.Flow) []shaper.Flow {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byFlow == nil {
		s.byFlow = map[shaper.FlowID]uint32{}
	}
	out := slices.Clone(flows)
	used := map[uint32]bool{}
	present := map[shaper.FlowID]bool{}
	var todo []int
	for i, f := range out {
		switch {
		case f.Direction != shaper.Uplink:
		case f.Mark != 0:
			used[f.Mark] = true
		default:
			present[f.ID] = true
			todo = append(todo, i)
		}
	}
	for id := range s.byFlow {
		if !present[id] {
			delete(s.byFlow, id)
		}
	}
	// Keep the marks of known flows first, then place new ones in identity
	// order, so the result does not depend on the input order.
	slices.SortFunc(todo, func(a, b int) int { return shaper.CompareFlowID(out[a].ID, out[b].ID) })
	var fresh []int
	for _, i := range todo {
		if m, ok := s.byFlow[out[i].ID]; ok && !used[m] {
			out[i].Mark = m
			used[m] = true
			continue
		}
		fresh = append(fresh, i)
	}
	for _, i := range fresh {
		m := stockMarkBase + markHash(out[i].ID)%stockMarkSpan
		for used[m] {
			m++
			if m >= stockMarkBase+stockMarkSpan {
				m = stockMarkBase
			}
		}
		used[m] = true
		out[i].Mark = m
		s.byFlow[out[i].ID] = m
	}
	return out
}

func markHash(id shaper.FlowID) uint32 {
	h := fnv.New32a()
	var b [12]byte
	for i := range 8 {
		b[i] = byte(id.SEID >> (8 * i))
	}
	for i := range 4 {
		b[8+i] = byte(id.QERID >> (8 * i))
	}
	_, _ = h.Write(b[:])
	return h.Sum32()
}
