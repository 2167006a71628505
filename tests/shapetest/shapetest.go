// Package shapetest is shared test plumbing for tests that need devices
// shaped the way `gtpqos watch` shapes them: a throwaway network namespace
// with an N3 and an N6 veth, HTB trees opened through package
// shaper/backends, and the stock-gtp5g GTP-U classifier attached.
//
// It is for tests only: helpers take a testing.TB and fail the test on
// error (or skip it, through package testenv, where the machine lacks root
// or a command).
package shapetest

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// StockLab is a network namespace with an N3 and an N6 veth, ready to be
// shaped (Shape) the way `gtpqos watch` shapes them on stock gtp5g:
// downlink tree on N3 with gtpu_egress, uplink tree on N6 with gtpu_ingress
// on N3 and mark_egress on N6.
type StockLab struct {
	// NS is the namespace; H a route-netlink handle inside it (closed when
	// the test ends).
	NS *testenv.NetNS
	H  *netlink.Handle
	// N3 and N6 name the devices (each one end of a veth pair).
	N3, N6 string
	// Shared is what Shape's two backends share: the GTP-U classifier
	// (nil before Shape).
	Shared *backends.Shared
	// DL and UL are the reports of Shape's Apply on N3 and N6: their
	// Classes are the planned classes with their flows.
	DL, UL shaper.Report
}

// StockFlows are two sessions sharing QFI 2, each with a downlink flow
// (TEIDs 101, 102) and an uplink flow (TEIDs 201, 202, marks 0x100001,
// 0x100002).
func StockFlows() []shaper.Flow {
	var out []shaper.Flow
	for s := uint64(1); s <= 2; s++ {
		out = append(out,
			shaper.Flow{ID: shaper.FlowID{SEID: s, QERID: 1}, QFI: 2, Direction: shaper.Downlink, GBR: 2e6, MBR: 4e6, TEID: uint32(100 + s)},
			shaper.Flow{ID: shaper.FlowID{SEID: s, QERID: 2}, QFI: 2, Direction: shaper.Uplink, GBR: 1e6, MBR: 2e6, TEID: uint32(200 + s), Mark: uint32(0x100000 + s)},
		)
	}
	return out
}

// NewStockLab creates the namespace with the veth pairs gqn3a-gqn3b (N3)
// and gqn6a-gqn6b (N6), all up, nothing shaped yet. It skips the test
// without root, ip or tc.
func NewStockLab(tb testing.TB) *StockLab {
	tb.Helper()
	testenv.RequireCmd(tb, "ip", "tc")
	l := &StockLab{NS: testenv.NewNetNS(tb), N3: "gqn3a", N6: "gqn6a"}
	l.NS.AddVethPair(tb, l.N3, "gqn3b")
	l.NS.AddVethPair(tb, l.N6, "gqn6b")
	l.H = HandleIn(tb, l.NS)
	return l
}

// Shape applies StockFlows to both devices as the watch daemon does on
// stock gtp5g (one backend per device sharing one GTP-U classifier, policy
// DefaultPolicy(100 Mbit/s) with classifier gtpu) and leaves everything
// attached, as a stopped daemon does. The classifier's BPF objects are
// released when the test ends.
func (l *StockLab) Shape(tb testing.TB) {
	tb.Helper()
	l.Shared = backends.NewShared(l.N3)
	gc, h := l.Shared, l.H
	tb.Cleanup(func() { _ = gc.Close(h) })
	pol, err := backends.Override(shaper.DefaultPolicy(100e6), shaper.Knobs{"classifier": "gtpu"})
	if err != nil {
		tb.Fatal(err)
	}
	for _, x := range []struct {
		dev string
		dir shaper.Direction
		rep *shaper.Report
	}{{l.N3, shaper.Downlink, &l.DL}, {l.N6, shaper.Uplink, &l.UL}} {
		be, err := backends.Open(x.dev, backends.Options{NetNS: l.NS.Handle, Marks: backends.Unmarked, Shared: gc, Direction: x.dir, N3: l.N3})
		if err != nil {
			tb.Fatalf("open backend on %s: %v", x.dev, err)
		}
		rep, err := be.Apply(context.Background(), shaper.FilterDirection(StockFlows(), x.dir), pol, shaper.ApplyOptions{Strict: true})
		_ = be.Close()
		if err != nil || len(rep.Problems) > 0 {
			tb.Fatalf("apply on %s: %v (problems %v)", x.dev, err, rep.Problems)
		}
		*x.rep = rep
	}
}

// directPkts is the part of `tc qdisc show` for HTB that counts packets
// sent while no class existed: it changes with traffic, not with state.
var directPkts = regexp.MustCompile(`direct_packets_stat \d+ `)

// TC runs tc with args inside the namespace and returns its output without
// HTB's direct_packets_stat counter, so two outputs compare equal when the
// state is the same.
func (l *StockLab) TC(tb testing.TB, args ...string) string {
	tb.Helper()
	return directPkts.ReplaceAllString(l.NS.Run(tb, "tc", args...), "")
}

// HandleIn opens a route-netlink handle inside ns, closed when the test
// ends.
func HandleIn(tb testing.TB, ns *testenv.NetNS) *netlink.Handle {
	tb.Helper()
	h, err := netlink.NewHandleAt(ns.Handle, unix.NETLINK_ROUTE)
	if err != nil {
		tb.Fatalf("netlink handle in netns %s: %v", ns.Name, err)
	}
	tb.Cleanup(h.Close)
	return h
}

// ClassID parses a class handle as tc writes it ("6771:10") into the
// class id the kernel uses (0x67710010), e.g. for SO_PRIORITY.
func ClassID(tb testing.TB, handle string) uint32 {
	tb.Helper()
	var major, minor uint32
	if n, err := fmt.Sscanf(handle, "%x:%x", &major, &minor); n != 2 || err != nil || major > 0xffff || minor > 0xffff {
		tb.Fatalf("class handle %q: want MAJOR:MINOR in hex", handle)
	}
	return major<<16 | minor
}
