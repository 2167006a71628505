// Command classstats prints a device's HTB class counters as `tc -s class
// show` does (class id, then a Sent line), framed by the monotonic clock
// read just before and just after the one netlink dump: a window between
// two readings is then known to a few milliseconds, where the start and
// exit of a tc process under an emulated guest blur it by tenths of a
// second. With -edt it also reads the leaf qdiscs' drops (in the same
// frame) and, in a frame of its own (EDTMONO), the edt program's per-flow
// counters from the device's pinned maps (user IP bytes each flow's
// packets passed the program with, those of them metered into the
// guaranteed class, and the horizon drops), then its sessions' AMBRs and
// its global counters (packets no flow claimed, found by GTP-U header, of
// those by SDF rule) with the TEIDs its SDF rule map holds. With -rx it
// also reads, in a frame of its own (RXMONO), the counters of the u32
// filters on another device's ingress (the receiving end of the shaped
// device's veth): what left the shaped device, per filter preference.
// Usage: classstats -dev n3w [-edt] [-rx n3p]
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/edt"
)

func main() {
	dev := flag.String("dev", "", "device whose classes to read")
	withEDT := flag.Bool("edt", false, "also read the leaf qdiscs' drops and the edt program's per-flow counters")
	rx := flag.String("rx", "", "also read the u32 filters' counters on this device's ingress")
	flag.Parse()
	err := run(*dev, *withEDT)
	if err == nil && *rx != "" {
		err = readRx(*rx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "classstats:", err)
		os.Exit(1)
	}
}

func now() (float64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9, nil
}

func run(dev string, withEDT bool) error {
	link, err := netlink.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("device %q: %w", dev, err)
	}
	var pc *edt.Pacer
	if withEDT { // opened before the frame: only the reads are inside it
		pins, err := classify.DevicePins(dev)
		if err != nil {
			return err
		}
		p, ok, err := edt.OpenPinned(pins)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("device %q: no pinned edt program", dev)
		}
		defer p.Close()
		pc = p
	}
	before, err := now()
	if err != nil {
		return err
	}
	classes, err := netlink.ClassList(link, 0)
	if err != nil {
		return fmt.Errorf("classes of %s: %w", dev, err)
	}
	var qdiscs []netlink.Qdisc
	if pc != nil {
		if qdiscs, err = netlink.QdiscList(link); err != nil {
			return fmt.Errorf("qdiscs of %s: %w", dev, err)
		}
	}
	after, err := now()
	if err != nil {
		return err
	}
	// The program's counters in a frame of their own: a few map reads,
	// so a scheduler's delay in the dumps above does not blur them.
	var flows map[uint32]edt.FlowInfo
	var sessions map[uint32]uint64
	var stats edt.Stats
	var rules map[uint32]edt.Rules
	var edtBefore, edtAfter float64
	if pc != nil {
		if edtBefore, err = now(); err != nil {
			return err
		}
		if flows, err = pc.ReadFlowsOnly(); err != nil {
			return err
		}
		if edtAfter, err = now(); err != nil {
			return err
		}
		if sessions, err = pc.ReadSessions(); err != nil {
			return err
		}
		if stats, err = pc.Stats(); err != nil {
			return err
		}
		if rules, err = pc.ReadRules(); err != nil {
			return err
		}
	}
	fmt.Printf("MONO %.6f %.6f\n", before, after)
	for _, c := range classes {
		a := c.Attrs()
		if c.Type() != "htb" || a.Statistics == nil || a.Statistics.Basic == nil {
			continue
		}
		fmt.Printf("class htb %s parent %s\n Sent %d bytes %d pkt\n", netlink.HandleStr(a.Handle), netlink.HandleStr(a.Parent), a.Statistics.Basic.Bytes, a.Statistics.Basic.Packets)
	}
	for _, q := range qdiscs {
		a := q.Attrs()
		if a.Statistics == nil || a.Statistics.Queue == nil {
			continue
		}
		fmt.Printf("qdisc %s %s parent %s drops %d backlog %d\n", q.Type(), netlink.HandleStr(a.Handle), netlink.HandleStr(a.Parent),
			a.Statistics.Queue.Drops, a.Statistics.Queue.Backlog)
	}
	if pc != nil {
		fmt.Printf("EDTMONO %.6f %.6f\n", edtBefore, edtAfter)
	}
	for _, id := range slices.Sorted(maps.Keys(flows)) {
		s := flows[id].State
		fmt.Printf("flow edt/%#x bytes %d pkts %d gbr_bytes %d gbr_pkts %d drops %d\n", id, s.Bytes, s.Packets, s.GBRBytes, s.GBRPackets, s.Drops)
	}
	for _, id := range slices.Sorted(maps.Keys(sessions)) {
		fmt.Printf("session %d ambr %d\n", id, sessions[id])
	}
	if pc != nil {
		fmt.Printf("program unknown %d gtpu %d sdf %d rules %d\n", stats.UnknownPackets, stats.GTPUPackets, stats.SDFPackets, len(rules))
	}
	return nil
}

// readRx prints the ingress u32 filters of dev with their first action's
// counters ("rx pref P bytes B pkts N"), framed by the monotonic clock.
// The dump may wait for rtnl, which a daemon's reconcile holds: of up to
// three dumps, the one in the narrowest frame is printed.
func readRx(dev string) error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	link, err := h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("device %q: %w", dev, err)
	}
	var best []netlink.Filter
	var from, to float64
	for i := 0; i < 3 && (best == nil || to-from > 0.005); i++ {
		before, err := now()
		if err != nil {
			return err
		}
		filters, err := h.FilterList(link, netlink.HANDLE_MIN_INGRESS)
		if err != nil {
			return fmt.Errorf("ingress filters of %s: %w", dev, err)
		}
		after, err := now()
		if err != nil {
			return err
		}
		if best == nil || after-before < to-from {
			best, from, to = filters, before, after
		}
	}
	fmt.Printf("RXMONO %.6f %.6f\n", from, to)
	for _, f := range best {
		u, ok := f.(*netlink.U32)
		if !ok || len(u.Actions) == 0 || u.Actions[0].Attrs().Statistics == nil {
			continue
		}
		st := u.Actions[0].Attrs().Statistics.Basic
		fmt.Printf("rx pref %d bytes %d pkts %d\n", u.Priority, st.Bytes, st.Packets)
	}
	return nil
}
