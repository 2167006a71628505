package htb

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// classCounters is what a class dump says of one class's counters.
type classCounters struct {
	ifindex int
	handle  uint32
	c       shaper.Counters
}

// parseClassCounters reads a class message's counters from its TCA_STATS2
// (basic, queue, and the 64-bit packet count the kernel adds once a
// class's packets pass 2^32: at 10 Mpps, seven minutes). It allocates
// nothing: a scrape parses one message per class.
func parseClassCounters(b []byte) (classCounters, error) {
	if len(b) < nl.SizeofTcMsg {
		return classCounters{}, fmt.Errorf("class message: %d bytes", len(b))
	}
	m := nl.DeserializeTcMsg(b)
	out := classCounters{ifindex: int(m.Ifindex), handle: m.Handle}
	var stats2 []byte
	if err := walkAttrs(b[nl.SizeofTcMsg:], func(typ uint16, v []byte) {
		if typ == nl.TCA_STATS2 {
			stats2 = v
		}
	}); err != nil {
		return out, fmt.Errorf("class message: %w", err)
	}
	var pkt64 bool
	err := walkAttrs(stats2, func(typ uint16, v []byte) {
		switch {
		case typ == nl.TCA_STATS_BASIC && len(v) >= 12:
			out.c.Bytes = binary.NativeEndian.Uint64(v[0:8])
			if !pkt64 {
				out.c.Packets = uint64(binary.NativeEndian.Uint32(v[8:12]))
			}
		case typ == nl.TCA_STATS_PKT64 && len(v) >= 8:
			out.c.Packets, pkt64 = binary.NativeEndian.Uint64(v), true
		case typ == nl.TCA_STATS_QUEUE && len(v) >= 20:
			out.c.Qlen = uint64(binary.NativeEndian.Uint32(v[0:4]))
			out.c.Backlog = uint64(binary.NativeEndian.Uint32(v[4:8]))
			out.c.Drops = uint64(binary.NativeEndian.Uint32(v[8:12]))
			out.c.Overlimits = uint64(binary.NativeEndian.Uint32(v[16:20]))
		}
	})
	if err != nil {
		return out, fmt.Errorf("class message: TCA_STATS2: %w", err)
	}
	return out, nil
}

// eachClassCounters dumps the device's classes under the owned root
// through c and calls fn with each owned class's counters.
func eachClassCounters(c *rtnl, ifindex int, fn func(minor uint16, cc shaper.Counters)) error {
	return c.query(classDumpReq(ifindex, rootHandle()), unix.RTM_NEWTCLASS, func(b []byte) error {
		cc, err := parseClassCounters(b)
		if err != nil {
			return err
		}
		if maj := uint16(cc.handle >> 16); maj == plan.OwnedMajor && cc.ifindex == ifindex {
			fn(uint16(cc.handle), cc.c)
		}
		return nil
	})
}
