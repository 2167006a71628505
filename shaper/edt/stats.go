package edt

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
)

// ebpfBatchOptions keeps batch.go's signature short.
type ebpfBatchOptions = ebpf.BatchOptions

// Stats counts the packets no flow claims, summed over CPUs.
type Stats struct {
	// Unknown counts packets with mark 0 or a mark in no flow (Stale
	// included): they got the default class.
	UnknownPackets, UnknownBytes uint64
	// Stale counts packets whose mark names a flow id that is gone.
	StalePackets uint64
	// NoSession counts packets of non-GBR flows whose session is gone
	// (paced by the flow's clock alone).
	NoSessionPackets uint64
	// NotIP counts paced packets that were neither IPv4 nor IPv6: their
	// tstamp was written without the delivery-time type.
	NotIPPackets uint64
	// GTPU counts packets found by their (TEID, QFI), no mark naming a
	// flow; Frag the non-first fragments that followed their first.
	GTPUPackets, FragPackets uint64
	// SDF counts, of GTPUPackets, those an SDF rule of their session
	// found.
	SDFPackets uint64
}

// Stats reads the program's global counters.
func (p *Pacer) Stats() (Stats, error) {
	var per []edtEdtStats
	if p.opts.noKeys {
		return p.statsByMark()
	}
	if p.opts.noRules {
		return p.statsByKey()
	}
	if err := p.objs.Stats.Lookup(uint32(0), &per); err != nil {
		return Stats{}, fmt.Errorf("edt: map stats: %w", err)
	}
	var s Stats
	for _, c := range per {
		s.UnknownPackets += c.UnknownPkts
		s.UnknownBytes += c.UnknownBytes
		s.StalePackets += c.StalePkts
		s.NoSessionPackets += c.NoSessionPkts
		s.NotIPPackets += c.NotIpPkts
		s.GTPUPackets += c.GtpuPkts
		s.FragPackets += c.FragPkts
		s.SDFPackets += c.SdfPkts
	}
	return s, nil
}

// statsByKey reads the counters of a program pinned by a gtpqos that
// found unmarked flows by (TEID, QFI) only (seven counters a CPU).
func (p *Pacer) statsByKey() (Stats, error) {
	var per []struct{ UnknownPkts, UnknownBytes, StalePkts, NoSessionPkts, NotIPPkts, GTPUPkts, FragPkts uint64 }
	if err := p.objs.Stats.Lookup(uint32(0), &per); err != nil {
		return Stats{}, fmt.Errorf("edt: map stats: %w", err)
	}
	var s Stats
	for _, c := range per {
		s.UnknownPackets += c.UnknownPkts
		s.UnknownBytes += c.UnknownBytes
		s.StalePackets += c.StalePkts
		s.NoSessionPackets += c.NoSessionPkts
		s.NotIPPackets += c.NotIPPkts
		s.GTPUPackets += c.GTPUPkts
		s.FragPackets += c.FragPkts
	}
	return s, nil
}

// statsByMark reads the counters of a program pinned by a gtpqos that
// found flows by mark only (five counters a CPU).
func (p *Pacer) statsByMark() (Stats, error) {
	var per []struct{ UnknownPkts, UnknownBytes, StalePkts, NoSessionPkts, NotIPPkts uint64 }
	if err := p.objs.Stats.Lookup(uint32(0), &per); err != nil {
		return Stats{}, fmt.Errorf("edt: map stats: %w", err)
	}
	var s Stats
	for _, c := range per {
		s.UnknownPackets += c.UnknownPkts
		s.UnknownBytes += c.UnknownBytes
		s.StalePackets += c.StalePkts
		s.NoSessionPackets += c.NoSessionPkts
		s.NotIPPackets += c.NotIPPkts
	}
	return s, nil
}

// MapMemory returns the kernel memory each map holds, in bytes, as the
// kernel reports it (the memlock line of the map's fdinfo).
func (p *Pacer) MapMemory() (map[string]uint64, error) {
	out := map[string]uint64{}
	for name, m := range map[string]*ebpf.Map{
		edtMapSessions: p.objs.Sessions, edtMapFlows: p.objs.Flows, edtMapMarks: p.objs.Marks,
		edtMapConfig: p.objs.Config, edtMapStats: p.objs.Stats,
		edtMapTeids: p.objs.Teids, edtMapFrags: p.objs.Frags, edtMapRules: p.objs.Rules,
	} {
		if m == nil {
			continue
		}
		n, err := memlock(m.FD())
		if err != nil {
			return nil, fmt.Errorf("edt: map %s: %w", name, err)
		}
		out[name] = n
	}
	return out, nil
}

func memlock(fd int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "memlock:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("fdinfo %d: no memlock line", fd)
}
