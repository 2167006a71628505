package backends

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
	"github.com/free5gc/gtpqos/tests/marksend"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// The backends' datapath side by side: how many packets per second one
// core pushes through a veth's egress with no qdisc, with the htb
// backend's class per flow, and with the edt backend's shared classes and
// pacing program, in one process so that the backends meet the same
// machine at the same load. Every flow's rates are far above what a round
// robin share of one core's packets gives it, so nothing waits for its
// rate: what is measured is classification (and, under edt, the pacing
// program's clocks and fq's per-flow queues) under the tree's root lock.

const (
	// ppsLink is the trees' link rate: far above what one core sends.
	ppsLink = 10_000_000_000
	// ppsMarkBase is the first flow's mark.
	ppsMarkBase = 0x10000
	// ppsPacketsPerOp is one op: enough packets to visit every flow of
	// the largest default size at -benchtime 1x.
	ppsPacketsPerOp = 1 << 16
	// ppsMaxEnv adds a larger size (htb up to plan.MaxClasses; edt up to
	// its maps' million sessions).
	ppsMaxEnv = "GTPQOS_BENCH_MAX"
)

// ppsSizes are the flow counts measured: 3 and 10,000, and the one
// GTPQOS_BENCH_MAX names.
func ppsSizes(b *testing.B) []int {
	sizes := []int{3, 10_000}
	if env := os.Getenv(ppsMaxEnv); env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n < 1 || n > 1_000_000 {
			b.Fatalf("%s=%q: want a flow count from 1 to 1000000", ppsMaxEnv, env)
		}
		if n != 3 && n != 10_000 {
			sizes = append(sizes, n)
		}
	}
	return sizes
}

// ppsFlows are n GBR flows sharing the link, each with its own mark.
func ppsFlows(n int) []shaper.Flow {
	fl := make([]shaper.Flow, n)
	gbr := uint64(ppsLink) / uint64(n) / 1000 * 1000
	for i := range fl {
		id := uint32(i + 1)
		fl[i] = shaper.Flow{ID: shaper.FlowID{SEID: uint64(id), QERID: 1}, QFI: 9, Direction: shaper.Downlink,
			GBR: gbr, MBR: ppsLink, Mark: ppsMarkBase + uint32(i)}
	}
	return fl
}

// ppsLab is one device, shaped by a backend or not, and a sender on it.
type ppsLab struct {
	ns  *testenv.NetNS
	h   *netlink.Handle
	dev string
	tx  *marksend.Sender
	be  shaper.Backend // nil: no qdisc
	cpu int
}

// newPPSLab builds a veth whose peer drops the frames (a foreign MAC) and
// a sender cycling through marks pinned to the highest CPU.
func newPPSLab(b *testing.B, marks []uint32) *ppsLab {
	testenv.RequireRoot(b)
	testenv.RequireCmd(b, "ip", "sysctl")
	l := &ppsLab{ns: testenv.NewNetNSPrefix(b, "pps-"), dev: "pps0", cpu: runtime.NumCPU() - 1}
	for _, k := range []string{"all", "default"} {
		l.ns.Run(b, "sysctl", "-qw", "net.ipv6.conf."+k+".disable_ipv6=1")
	}
	l.ns.AddVethPair(b, l.dev, "pps1")
	h, err := netlink.NewHandleAt(l.ns.Handle, unix.NETLINK_ROUTE)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	l.h = h
	tx, err := marksend.New(l.ns.Handle, l.dev, net.HardwareAddr{2, 0, 0, 0, 0, 9}, net.IPv4(10, 77, 0, 1), net.IPv4(10, 77, 0, 9), marks)
	if err != nil {
		b.Fatalf("sender on %s: %v", l.dev, err)
	}
	b.Cleanup(func() { _ = tx.Close() })
	l.tx = tx
	return l
}

// shape opens the named backend on the device as `gtpqos apply` does and
// applies the flows.
func (l *ppsLab) shape(b *testing.B, name string, flows []shaper.Flow) {
	pol := shaper.DefaultPolicy(ppsLink)
	pol.Backend = name
	be, err := Open(l.dev, Options{Backend: name, NetNS: l.ns.Handle, Policy: &pol, Writer: "bench", LockDir: b.TempDir()})
	if err != nil {
		b.Fatalf("open %s: %v", name, err)
	}
	b.Cleanup(func() { _ = be.Close() })
	rep, err := be.Apply(context.Background(), flows, pol, shaper.ApplyOptions{Strict: true})
	if err != nil {
		b.Fatalf("%s: apply %d flows: %v", name, len(flows), err)
	}
	b.Logf("%s: %d flows applied, %d writes", name, len(flows), rep.Writes)
	l.be = be
}

// perFlow returns the packets each flow has counted, by mark order.
func (l *ppsLab) perFlow(b *testing.B) map[shaper.FlowID]uint64 {
	if l.be == nil {
		return nil
	}
	fcs, err := l.be.FlowCounters(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	out := make(map[shaper.FlowID]uint64, len(fcs))
	for _, fc := range fcs {
		out[fc.Flow] = fc.Packets
	}
	return out
}

// txPackets is the device's tx packet count.
func (l *ppsLab) txPackets(b *testing.B) uint64 {
	link, err := l.h.LinkByName(l.dev)
	if err != nil {
		b.Fatal(err)
	}
	return link.Attrs().Statistics.TxPackets
}

// bench is one timed run of b.N ops. It checks that every packet the
// kernel took was counted by its own flow (a flow per mark, each mark
// sent in turn), and reports packets per second out of the device.
func (l *ppsLab) bench(b *testing.B) {
	before, tx0 := l.perFlow(b), l.txPackets(b)
	b.ResetTimer()
	r := l.tx.Run(l.cpu, b.N*ppsPacketsPerOp)
	b.StopTimer()
	if r.Err != nil {
		b.Fatal(r.Err)
	}
	after := l.perFlow(b)
	if l.be != nil {
		var counted uint64
		hit := 0
		for id, n := range after {
			if d := n - before[id]; d > 0 {
				counted += d
				hit++
			}
		}
		if counted < uint64(r.Accepted) || hit != min(len(after), r.Accepted) {
			b.Fatalf("%d packets sent: %d counted by %d flows, want every one by its own flow (%d flows)", r.Accepted, counted, hit, len(after))
		}
	}
	out := l.txPackets(b) - tx0
	b.ReportMetric(float64(out)/r.Elapsed.Seconds(), "pps")
	b.ReportMetric(float64(r.CPU.Nanoseconds())/float64(max(out, 1)), "cpu-ns/pkt")
	b.ReportMetric(float64(r.ENOBUFS), "enobufs")
}

// BenchmarkDatapathBackends measures packets per second out of one veth,
// one pinned sending core, 60-byte frames with the next flow's mark in
// turn: with no qdisc, then the htb and the edt backends at 3 and 10,000
// flows (and GTPQOS_BENCH_MAX), each opened and applied as `gtpqos apply`
// does. edt needs sch_fq (the Debian kernels of the VM): without it, its
// cases skip with the backend's own refusal.
//
//	go test -run '^$' -bench DatapathBackends -benchtime 1x ./shaper/backends/
func BenchmarkDatapathBackends(b *testing.B) {
	b.Run("none", func(b *testing.B) {
		b.Run("pps", newPPSLab(b, []uint32{ppsMarkBase}).bench)
	})
	for _, n := range ppsSizes(b) {
		flows := ppsFlows(n)
		marks := make([]uint32, n)
		for i, f := range flows {
			marks[i] = f.Mark
		}
		for _, name := range []string{"htb", "edt"} {
			b.Run(fmt.Sprintf("%s-%d", name, n), func(b *testing.B) {
				if name == "htb" && n > plan.MaxClasses {
					b.Skipf("htb holds at most %d flow classes on one device", plan.MaxClasses)
				}
				if p := registry[name].probe; p != nil {
					if err := p(); err != nil {
						b.Skipf("%s: %v", name, err)
					}
				}
				l := newPPSLab(b, marks)
				l.shape(b, name, flows)
				b.Run("pps", l.bench)
			})
		}
	}
}
