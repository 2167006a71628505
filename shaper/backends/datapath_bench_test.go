package backends

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

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
	// ppsPacketsPerOp is one op: ppsRounds rounds of 8,192 packets,
	// enough to visit every flow of the largest default size at
	// -benchtime 1x.
	ppsPacketsPerOp = ppsRounds << 13
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

// ppsLab is one device, shaped by a backend or not, and a sender on it,
// beside a reference device with no qdisc and a sender of its own: the
// timed rounds alternate between the two, so that a change of the
// machine's load during the run moves both.
type ppsLab struct {
	ns      *testenv.NetNS
	h       *netlink.Handle
	dev     string
	tx, ref *marksend.Sender
	be      shaper.Backend // nil: no qdisc
	refName string         // what the reference device is: "unshaped", or the case shaping it
	cpu     int
}

// ppsRefDev is the reference device.
const ppsRefDev = "ppsr0"

// newPPSLab builds a veth whose peer drops the frames (a foreign MAC) and
// a sender cycling through marks pinned to the highest CPU, and the
// reference veth with a sender cycling through refMarks (nil: the first
// of marks).
func newPPSLab(b *testing.B, marks, refMarks []uint32) *ppsLab {
	testenv.RequireRoot(b)
	testenv.RequireCmd(b, "ip", "sysctl")
	l := &ppsLab{ns: testenv.NewNetNSPrefix(b, "pps-"), dev: "pps0", refName: "unshaped", cpu: runtime.NumCPU() - 1}
	if refMarks == nil {
		refMarks = marks[:1]
	}
	for _, k := range []string{"all", "default"} {
		l.ns.Run(b, "sysctl", "-qw", "net.ipv6.conf."+k+".disable_ipv6=1")
	}
	l.ns.AddVethPair(b, l.dev, "pps1")
	l.ns.AddVethPair(b, ppsRefDev, "ppsr1")
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
	ref, err := marksend.New(l.ns.Handle, ppsRefDev, net.HardwareAddr{2, 0, 0, 0, 0, 9}, net.IPv4(10, 77, 1, 1), net.IPv4(10, 77, 1, 9), refMarks)
	if err != nil {
		b.Fatalf("sender on %s: %v", ppsRefDev, err)
	}
	b.Cleanup(func() { _ = ref.Close() })
	l.tx, l.ref = tx, ref
	return l
}

// shape opens the named backend on the device as `gtpqos apply` does and
// applies the flows.
func (l *ppsLab) shape(b *testing.B, name string, flows []shaper.Flow) {
	l.be = l.shapeDev(b, l.dev, name, flows)
}

// shapeRef shapes the reference device likewise: the rounds then compare
// two trees, and the ratio is of the reference's case.
func (l *ppsLab) shapeRef(b *testing.B, name string, flows []shaper.Flow) {
	l.shapeDev(b, ppsRefDev, name, flows)
	l.refName = fmt.Sprintf("%s-%d", name, len(flows))
}

func (l *ppsLab) shapeDev(b *testing.B, dev, name string, flows []shaper.Flow) shaper.Backend {
	pol := shaper.DefaultPolicy(ppsLink)
	pol.Backend = name
	if name == "edt" { // maps with room for every flow (two flows a session)
		pol.BackendKnobs = pol.BackendKnobs.With("edt", shaper.Knobs{"sessions": strconv.Itoa(max(len(flows)/2, 1))})
	}
	be, err := Open(dev, Options{Backend: name, NetNS: l.ns.Handle, Policy: &pol, Writer: "bench", LockDir: b.TempDir()})
	if err != nil {
		b.Fatalf("open %s: %v", name, err)
	}
	b.Cleanup(func() {
		// Leave no pins behind: a later case's namespace may get this
		// one's inode number, and with it this one's pin directory.
		_, _ = be.Reset(context.Background())
		_ = be.Close()
	})
	rep, err := be.Apply(context.Background(), flows, pol, shaper.ApplyOptions{Strict: true})
	if err != nil {
		b.Fatalf("%s: apply %d flows: %v", name, len(flows), err)
	}
	b.Logf("%s on %s: %d flows applied, %d writes", name, dev, len(flows), rep.Writes)
	return be
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

// ppsRounds is how many rounds each op alternates between the shaped and
// the reference device.
const ppsRounds = 9

// bench is one timed run of b.N ops, each ppsRounds rounds of a share of
// ppsPacketsPerOp packets on the shaped device, then as many on the
// reference one. It checks that every packet the kernel took on the shaped
// device was counted by its own flow (a flow per mark, each mark sent in
// turn), and reports the shaped device's packets per second (the median
// round), the reference's, and the median of each round's ratio to the
// reference round right after it: a change of the machine's speed during
// the run moves both rounds of a pair, where the ratio of two medians
// would take them from different moments.
func (l *ppsLab) bench(b *testing.B) {
	before, tx0 := l.perFlow(b), l.txPackets(b)
	per := ppsPacketsPerOp / ppsRounds
	var shaped, ref, ratios []float64
	var accepted, enobufs int
	var cpu time.Duration
	b.ResetTimer()
	for range b.N * ppsRounds {
		r := l.tx.Run(l.cpu, per)
		if r.Err != nil {
			b.Fatal(r.Err)
		}
		accepted, enobufs, cpu = accepted+r.Accepted, enobufs+r.ENOBUFS, cpu+r.CPU
		shaped = append(shaped, float64(r.Accepted)/r.Elapsed.Seconds())
		rr := l.ref.Run(l.cpu, per)
		if rr.Err != nil {
			b.Fatal(rr.Err)
		}
		ref = append(ref, float64(rr.Accepted)/rr.Elapsed.Seconds())
		ratios = append(ratios, shaped[len(shaped)-1]/ref[len(ref)-1])
	}
	b.StopTimer()
	if out := l.txPackets(b) - tx0; out < uint64(accepted) {
		b.Fatalf("the kernel took %d packets but %s sent %d", accepted, l.dev, out)
	}
	if l.be != nil {
		after := l.perFlow(b)
		var counted uint64
		hit := 0
		for id, n := range after {
			if d := n - before[id]; d > 0 {
				counted += d
				hit++
			}
		}
		if counted < uint64(accepted) || hit != min(len(after), accepted) {
			b.Fatalf("%d packets sent: %d counted by %d flows, want every one by its own flow (%d flows)", accepted, counted, hit, len(after))
		}
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(median(shaped), "pps")
	b.ReportMetric(median(ref), l.refName+"-pps")
	b.ReportMetric(median(ratios), "of-"+l.refName)
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(accepted, 1)), "cpu-ns/pkt")
	b.ReportMetric(float64(enobufs), "enobufs")
}

// BenchmarkDatapathBackends measures packets per second out of one veth,
// one pinned sending core, 60-byte frames with the next flow's mark in
// turn: with no qdisc, then the htb and the edt backends at 3 and 10,000
// flows (and GTPQOS_BENCH_MAX), each opened and applied as `gtpqos apply`
// does, each case alternating with an unshaped veth beside it (reported
// as unshaped-pps and the ratio of-unshaped: compare backends by it). edt needs sch_fq (the Debian kernels of the VM): without it, its
// cases skip with the backend's own refusal.
//
//	go test -run '^$' -bench DatapathBackends -benchtime 1x ./shaper/backends/
func BenchmarkDatapathBackends(b *testing.B) {
	b.Run("none", func(b *testing.B) {
		b.Run("pps", newPPSLab(b, []uint32{ppsMarkBase}, nil).bench)
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
				l := newPPSLab(b, marks, nil)
				l.shape(b, name, flows)
				b.Run("pps", l.bench)
			})
		}
		if n > 3 {
			b.Run(fmt.Sprintf("edt-%d-vs-htb-3", n), func(b *testing.B) {
				benchHeadToHead(b, flows, marks)
			})
			b.Run(fmt.Sprintf("lookup-floor-%d-vs-htb-3", n), func(b *testing.B) {
				benchLookupFloor(b, flows, marks)
			})
			b.Run(fmt.Sprintf("array-floor-%d-vs-htb-3", n), func(b *testing.B) {
				benchArrayFloor(b, flows, marks)
			})
		}
		if n == 3 {
			b.Run("edt-floor-3", func(b *testing.B) {
				benchFloor(b, flows, marks)
			})
		}
	}
}
