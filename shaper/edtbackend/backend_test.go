package edtbackend

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// openIn opens the backend on dev in ns.
func openIn(t *testing.T, ns *testenv.NetNS, dev string) *Backend {
	t.Helper()
	h, err := netlink.NewHandleAt(ns.Handle, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(h, h.Close, dev, Options{NetNS: ns.Handle, Sessions: 64})
	if err != nil {
		h.Close()
		t.Fatal(err)
	}
	return b
}

// edtDevice is a veth in a namespace of its own (named from the prefixes)
// for a test that applies the edt backend; it skips under -short and
// where the kernel lacks sch_fq or the BPF capabilities (the host).
func edtDevice(t *testing.T, nsPrefix, devPrefix string) (*testenv.NetNS, string) {
	t.Helper()
	testenv.SkipShort(t)
	ns := testenv.NewNetNSPrefix(t, nsPrefix)
	dev := testenv.UniqueName(devPrefix)
	ns.AddVethPair(t, dev, dev+"p")
	if err := Probe(); err != nil {
		t.Skipf("needs sch_fq and the BPF capabilities: %v", err)
	}
	return ns, dev
}

// testPolicy is a 20 Mbit/s link with the Ethernet header as overhead.
func testPolicy() shaper.Policy {
	pol := shaper.DefaultPolicy(20e6)
	pol.Overhead = shaper.Overhead{Fixed: true, Bytes: 14}
	return pol
}

// A session added or removed by Update is map writes only (no class is
// written); FlowCounters reads the program's per-flow counters; a
// backend opened afresh adopts the pinned program and maps (Inspect finds
// the flows by mark, a second Apply writes nothing); Reset leaves no
// qdisc, filter or pin of ours. Needs sch_fq (the VM).
func TestIntegrationUpdateAdoptReset(t *testing.T) {
	ns, dev := edtDevice(t, "eb-", "ebu")
	ctx, pol, flows := context.Background(), testPolicy(), testFlows()[:2] // session 1: A and B
	b := openIn(t, ns, dev)
	if rep, err := b.Apply(ctx, flows, pol, shaper.ApplyOptions{Strict: true}); err != nil || rep.Writes == 0 {
		t.Fatalf("apply: %v, %d writes", err, rep.Writes)
	}
	c := shaper.Flow{ID: shaper.FlowID{SEID: 2, QERID: 1}, Name: "C", QFI: 9, MBR: 2e6, SessionAMBR: 2e6, Mark: 0x40}
	rep, err := b.Update(ctx, map[uint64][]shaper.Flow{2: {c}}, pol)
	if err != nil || rep.Writes != 2 || len(rep.Classes) != 1 || rep.Classes[0].Key.Mark != 0x40 {
		t.Errorf("update adding session 2: %v, %d writes, classes %v; want a session and a flow written, flow C reported", err, rep.Writes, rep.Classes)
	}
	for _, ch := range rep.Changes {
		if ch.Object == "class" || ch.Object == "qdisc" {
			t.Errorf("update wrote %s", ch)
		}
	}
	if rep, err = b.Update(ctx, map[uint64][]shaper.Flow{2: nil}, pol); err != nil || rep.Writes != 2 {
		t.Errorf("update removing session 2: %v, %d writes; want the flow and the session removed", err, rep.Writes)
	}
	fc, err := b.FlowCounters(ctx)
	if err != nil || len(fc) != 2 || fc[0].Class != ClassID(MinorNonGBR) || fc[1].Class != ClassID(MinorNonGBR) {
		t.Errorf("flow counters %+v, %v; want A and B, each named by the non-GBR class it shares", fc, err)
	}
	b.Close()

	b = openIn(t, ns, dev)
	defer b.Close()
	in, err := b.Inspect(ctx)
	if err != nil || !in.Owned || in.Classifier != Name || len(in.FlowClasses()) != 2 || in.Overhead != 14 {
		t.Fatalf("inspect after reopening: %v, %+v", err, in)
	}
	if rep, err := b.Apply(ctx, flows, pol, shaper.ApplyOptions{Strict: true}); err != nil || rep.Writes != 0 {
		t.Errorf("apply after reopening: %v, %d writes %v; want none", err, rep.Writes, rep.Changes)
	}
	lines, err := b.Reset(ctx)
	if err != nil || len(lines) != 3 {
		t.Errorf("reset: %v, %q; want filter, tree and pins removed", err, lines)
	}
	if out := ns.Run(t, "tc", "qdisc", "show", "dev", dev); strings.Contains(out, "6765:") || strings.Contains(out, "clsact") {
		t.Errorf("after reset: %s", out)
	}
	pins, err := PinsIn(ns.Handle, dev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pins.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pin directory %s after reset: %v", pins.Dir, err)
	}
}
