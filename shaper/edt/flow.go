package edt

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/cilium/ebpf"

	"github.com/free5gc/gtpqos/shaper"
)

// DefaultGBRBurst is how many bytes ahead of its GBR a flow may send and
// still be in the guaranteed class: the 32 KiB the HTB backend gives a
// class's burst, so a flow's packets count as guaranteed under the same
// burst in both backends.
const DefaultGBRBurst = 32 << 10

// DefaultBurst is the idle credit the backend gives every MBR and AMBR
// clock (LoadOptions.Burst): the 32 KiB of an HTB class's burst, so after
// idle time a flow may send as much at once under either backend. A
// greedy flow never has credit: over any window its rate is its MBR.
const DefaultBurst = 32 << 10

// DefaultFlowAhead is LoadOptions.FlowAhead for leaves that keep fq's
// default flow_limit (100): 96, a few under it for packets whose time has
// come but that HTB has not dequeued yet.
const DefaultFlowAhead = 96

// Key is a GTP-U packet's (TEID, QFI): how the program finds the flow of
// a packet that carries no mark (stock gtp5g), from its outer GTP-U header
// and PDU Session Container.
type Key struct {
	TEID uint32 // not 0
	QFI  uint8  // 0..63
}

// String formats the key as "teid=T qfi=Q".
func (k Key) String() string { return fmt.Sprintf("teid=%d qfi=%d", k.TEID, k.QFI) }

// FlowSpec is what the pacer knows of one QoS flow.
type FlowSpec struct {
	// Marks are the skb->mark values (within shaper.MarkMask, not 0)
	// that name the flow: one per PDR that points at its QER.
	Marks []uint32
	// Keys are the (TEID, QFI) pairs that name the flow's packets when
	// no mark does. A flow needs a mark or a key; a mark that names a
	// flow wins over the packet's key.
	Keys []Key
	// Session is the PDU session (AddSession) whose AMBR a non-GBR flow
	// is under; 0: none. GBR flows are outside the session AMBR (TS
	// 23.501), so a GBR flow's Session is not used for pacing.
	Session uint32
	// GBR and MBR in bit/s of the user's IP packets; 0: none. An MBR
	// paces every packet of the flow.
	GBR, MBR uint64
	// DelayBudget is the horizon: a packet whose departure lies further
	// ahead is dropped. It must be positive.
	DelayBudget time.Duration
	// GBRBurst is the bytes the GBR meter lets the flow run ahead of its
	// GBR; 0: DefaultGBRBurst.
	GBRBurst uint32
	// Class is the shared class id (skb->priority) of the flow's non-GBR
	// packets (a GBR flow's excess); 0 leaves skb->priority alone.
	Class uint32
	// GBRClass is the guaranteed shared class id; required with a GBR.
	GBRClass uint32
	// Hash is the skb->hash the flow's packets get; 0: one derived from
	// the flow id.
	Hash uint32
}

// check validates s for flow id, naming what is wrong.
func (s FlowSpec) check(id uint32) error {
	if len(s.Marks) == 0 && len(s.Keys) == 0 {
		return fmt.Errorf("edt: flow %d: no marks and no keys", id)
	}
	for _, k := range s.Keys {
		if k.TEID == 0 || k.QFI > 63 {
			return fmt.Errorf("edt: flow %d: key %s: TEID 0 or QFI above 63", id, k)
		}
	}
	for _, m := range s.Marks {
		if m == 0 || m&^shaper.MarkMask != 0 {
			return fmt.Errorf("edt: flow %d: mark %#x outside %#x or 0", id, m, shaper.MarkMask)
		}
	}
	if s.DelayBudget <= 0 {
		return fmt.Errorf("edt: flow %d: delay budget %v not positive", id, s.DelayBudget)
	}
	if s.GBR > 0 && s.MBR > 0 && s.GBR > s.MBR {
		return fmt.Errorf("edt: flow %d: GBR %d bit/s above MBR %d bit/s", id, s.GBR, s.MBR)
	}
	if s.GBR > 0 && s.GBRClass == 0 {
		return fmt.Errorf("edt: flow %d: GBR %d bit/s but no guaranteed class", id, s.GBR)
	}
	return nil
}

// value is the map value of a new flow (clocks and counters zero), its
// clocks' idle credit burst bytes (the program's LoadOptions.Burst).
func (s FlowSpec) value(id, burst uint32) edtFlow {
	v := edtFlow{
		Session:     s.Session,
		MbrBps:      s.MBR,
		GbrBps:      s.GBR,
		BudgetNs:    uint64(s.DelayBudget),
		ClassId:     s.Class,
		GbrClassId:  s.GBRClass,
		Hash:        s.Hash,
		MbrCreditNs: creditNs(burst, s.MBR),
		GbrCreditNs: creditNs(burst, s.GBR),
	}
	if v.Hash == 0 {
		v.Hash = flowHash(id)
	}
	if s.GBR > 0 {
		burst := uint64(s.GBRBurst)
		if burst == 0 {
			burst = DefaultGBRBurst
		}
		v.GbrBurstNs = burst * 8 * uint64(time.Second) / s.GBR
	}
	if s.Session != 0 && s.GBR == 0 {
		v.Flags |= flowAMBR
	}
	if slices.Contains(s.Marks, id) {
		v.Flags |= flowIDIsMark
	}
	return v
}

// creditNs is the time burst bytes take at bps bit/s, a clock's idle
// credit (0 without a rate), saturated where it would not fit.
func creditNs(burst uint32, bps uint64) uint64 {
	if bps == 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(burst)*8, uint64(time.Second))
	if hi >= bps {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, bps)
	return q
}

// flowAMBR and flowIDIsMark are FLOW_AMBR and FLOW_ID_IS_MARK in
// bpf/edt.c.
const (
	flowAMBR     = 1
	flowIDIsMark = 2
)

// flowHash spreads flow ids over the hash space (murmur3's finalizer), so
// fq's buckets and orphan mask see consecutive ids apart; never 0.
func flowHash(id uint32) uint32 {
	h := id ^ 0x9e3779b9
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	if h == 0 {
		h = 1
	}
	return h
}

// AddFlow writes a new flow id and then its marks and keys, so a packet
// never meets a mark or key without its flow. An id, a mark or a key
// already in use is an error naming it, and nothing of the flow stays
// behind.
func (p *Pacer) AddFlow(id uint32, s FlowSpec) error {
	if err := s.check(id); err != nil {
		return err
	}
	v := s.value(id, p.opts.Burst)
	if err := p.objs.Flows.Update(id, &v, ebpf.UpdateNoExist); err != nil {
		if errors.Is(err, ebpf.ErrKeyExist) {
			return fmt.Errorf("edt: flow %d exists", id)
		}
		return fmt.Errorf("edt: map flows: add flow %d: %w", id, mapFull(err))
	}
	for i, m := range s.Marks {
		if err := p.objs.Marks.Update(m, id, ebpf.UpdateNoExist); err != nil {
			p.undoFlow(id, s.Marks[:i])
			var holder uint32
			if errors.Is(err, ebpf.ErrKeyExist) && p.objs.Marks.Lookup(m, &holder) == nil {
				return fmt.Errorf("edt: flow %d: mark %#x belongs to flow %d", id, m, holder)
			}
			return fmt.Errorf("edt: map marks: flow %d: add mark %#x: %w", id, m, mapFull(err))
		}
	}
	if len(s.Keys) > 0 && p.objs.Teids == nil {
		p.undoFlow(id, s.Marks)
		return fmt.Errorf("edt: flow %d: this program has no (TEID, QFI) map (pinned by an older gtpqos)", id)
	}
	for i, k := range s.Keys {
		if err := p.objs.Teids.Update(k.mapKey(), id, ebpf.UpdateNoExist); err != nil {
			p.undoFlow(id, s.Marks, s.Keys[:i]...)
			var holder uint32
			if errors.Is(err, ebpf.ErrKeyExist) && p.objs.Teids.Lookup(k.mapKey(), &holder) == nil {
				return fmt.Errorf("edt: flow %d: key %s belongs to flow %d", id, k, holder)
			}
			return fmt.Errorf("edt: map teids: flow %d: add key %s: %w", id, k, mapFull(err))
		}
	}
	return nil
}

func (k Key) mapKey() edtFlowKey { return edtFlowKey{Teid: k.TEID, Qfi: k.QFI} }

func (p *Pacer) undoFlow(id uint32, marks []uint32, keys ...Key) {
	for _, k := range keys {
		_ = p.objs.Teids.Delete(k.mapKey())
	}
	for _, m := range marks {
		_ = p.objs.Marks.Delete(m)
	}
	_ = p.objs.Flows.Delete(id)
}

// RemoveKeys deletes the flow's (TEID, QFI) keys that still name it (call
// it before RemoveFlow). What is already gone is not an error.
func (p *Pacer) RemoveKeys(id uint32, keys ...Key) error {
	if p.objs.Teids == nil {
		return nil
	}
	for _, k := range keys {
		var holder uint32
		if err := p.objs.Teids.Lookup(k.mapKey(), &holder); err != nil {
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				continue
			}
			return fmt.Errorf("edt: map teids: flow %d: read key %s: %w", id, k, err)
		}
		if holder != id {
			continue
		}
		if err := p.objs.Teids.Delete(k.mapKey()); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("edt: map teids: flow %d: delete key %s: %w", id, k, err)
		}
	}
	return nil
}

// RemoveFlow deletes the flow's marks (those still naming it), then the
// flow. What is already gone is not an error.
func (p *Pacer) RemoveFlow(id uint32, marks ...uint32) error {
	for _, m := range marks {
		var holder uint32
		if err := p.objs.Marks.Lookup(m, &holder); err != nil {
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				continue
			}
			return fmt.Errorf("edt: map marks: flow %d: read mark %#x: %w", id, m, err)
		}
		if holder != id {
			continue
		}
		if err := p.objs.Marks.Delete(m); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("edt: map marks: flow %d: delete mark %#x: %w", id, m, err)
		}
	}
	if err := p.objs.Flows.Delete(id); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("edt: map flows: delete flow %d: %w", id, err)
	}
	return nil
}

// FlowState is a flow's clocks and counters as the program left them.
type FlowState struct {
	// MBRClock and GBRClock are CLOCK_MONOTONIC nanoseconds.
	MBRClock, GBRClock uint64
	// Packets and Bytes passed (user bytes), GBR* of them in the
	// guaranteed class (the rest went to the non-GBR class), Drops and
	// DropBytes dropped beyond the horizon.
	Packets, Bytes       uint64
	GBRPackets, GBRBytes uint64
	Drops, DropBytes     uint64
}

// Flow reads flow id's state under the flow's lock: a consistent snapshot
// for a flow outside any AMBR; the program keeps a non-GBR flow's clocks
// and counters under its session's lock, so for those each field is read
// whole but the fields may be a packet apart.
func (p *Pacer) Flow(id uint32) (FlowState, error) {
	var v edtFlow
	if err := p.objs.Flows.LookupWithFlags(id, &v, ebpf.LookupLock); err != nil {
		return FlowState{}, fmt.Errorf("edt: map flows: read flow %d: %w", id, err)
	}
	return FlowState{
		MBRClock: v.MbrClock, GBRClock: v.GbrClock,
		Packets: v.Pkts, Bytes: v.Bytes,
		GBRPackets: v.GbrPkts, GBRBytes: v.GbrBytes,
		Drops: v.Drops, DropBytes: v.DropBytes,
	}, nil
}
