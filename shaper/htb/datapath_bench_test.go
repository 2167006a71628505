package htb

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
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

// The datapath benchmark: how many packets per second one core pushes
// through the egress of a device shaped by gtpqos's tree, against the same
// device with no qdisc. Rates are set so that no class is ever limited
// (every flow stays under its own rate, so HTB never borrows or throttles):
// what is measured is classification, enqueue and dequeue under HTB's root
// lock, which every packet of the device takes.

const (
	// dpLink is the link rate of the datapath trees: far above what one
	// core sends (1.6 Mpps of 60-byte frames is 0.8 Gbit/s).
	dpLink = 10_000 * mbit
	// dpMarkBase is the first flow's mark.
	dpMarkBase = 0x10000
	// dpPacketsPerOp is one benchmark op: enough packets that even
	// -benchtime 1x (make bench) times a meaningful run and visits every
	// class of the largest tree.
	dpPacketsPerOp = 1 << 16
	// dpMaxEnv names the variable that adds larger trees (up to 65,518
	// classes: over 13 minutes to build).
	dpMaxEnv = "GTPQOS_BENCH_MAX"
	// dpCPUEnv names the variable that picks the sending CPU.
	dpCPUEnv = "GTPQOS_BENCH_CPU"
)

// dpStandardSizes are the flow-class counts measured by default (up to
// 10,000) and with GTPQOS_BENCH_MAX=65518.
var dpStandardSizes = []int{3, 10_000, plan.MaxClasses}

// dpSizes returns the class counts to measure: the standard sizes up to
// GTPQOS_BENCH_MAX (default 10,000), plus the maximum itself.
func dpSizes(env string) ([]int, error) {
	max := 10_000
	if env != "" {
		v, err := strconv.Atoi(env)
		if err != nil || v < 1 || v > plan.MaxClasses {
			return nil, fmt.Errorf("%s=%q: want a class count from 1 to %d", dpMaxEnv, env, plan.MaxClasses)
		}
		max = v
	}
	var out []int
	for _, n := range dpStandardSizes {
		if n <= max {
			out = append(out, n)
		}
	}
	if !slices.Contains(out, max) {
		out = append(out, max)
	}
	return out, nil
}

// dpCPU returns the CPU to pin the sender to: GTPQOS_BENCH_CPU, else the
// highest CPU this process may run on.
func dpCPU(b *testing.B) int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		b.Fatalf("sched_getaffinity: %v", err)
	}
	if env := os.Getenv(dpCPUEnv); env != "" {
		cpu, err := strconv.Atoi(env)
		if err != nil || cpu < 0 || !set.IsSet(cpu) {
			b.Fatalf("%s=%q: want a CPU this process may run on", dpCPUEnv, env)
		}
		return cpu
	}
	cpu := -1
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpu = i
		}
	}
	return cpu
}

// dpFlows returns n GBR flows whose guarantees share the link: each
// flow's rate is far above what a round-robin share of one core's packets
// gives it, and its ceil is the link.
func dpFlows(n int) []shaper.Flow {
	fl := make([]shaper.Flow, n)
	gbr := dpLink / uint64(n) / 1000 * 1000
	for i := range fl {
		id := uint32(i + 1)
		fl[i] = shaper.Flow{ID: shaper.FlowID{SEID: uint64(id), QERID: id}, QFI: 9, Direction: shaper.Downlink,
			GBR: gbr, MBR: dpLink, Mark: dpMarkBase + uint32(i)}
	}
	return fl
}

// dpLab is one shaped (or unshaped) device and a sender on it.
type dpLab struct {
	*lab
	tx  *marksend.Sender
	cpu int
	// rec reads the class counters (nil: no qdisc); flowMinors are the
	// flow classes, by mark order.
	rec        *Reconciler
	flowMinors []uint16
}

// newDPLab builds the veth lab and a sender pinned to cpu for n flows'
// marks (n = 0: no qdisc, one mark).
func newDPLab(b *testing.B, n, cpu int) *dpLab {
	l := &dpLab{lab: newLab(b), cpu: cpu}
	// No IPv6 router solicitations or MLD reports in the default class.
	if out, err := l.ns.Try("sysctl", "-qw", "net.ipv6.conf."+l.dev+".disable_ipv6=1"); err != nil {
		b.Logf("disable IPv6 on %s: %v %s", l.dev, err, out)
	}
	marks := []uint32{dpMarkBase}
	if n > 0 {
		marks = marks[:0]
		for i := 0; i < n; i++ {
			marks = append(marks, dpMarkBase+uint32(i))
		}
	}
	tx, err := marksend.New(l.ns.Handle, l.dev, net.HardwareAddr{2, 0, 0, 0, 0, 9},
		net.IPv4(10, 77, 0, 1), net.IPv4(10, 77, 0, 9), marks)
	if err != nil {
		b.Fatalf("sender on %s: %v", l.dev, err)
	}
	b.Cleanup(func() { _ = tx.Close() })
	l.tx = tx
	return l
}

// build applies n flows through the product's HTB backend (the classifier
// and leaf it auto-detects) and checks that the kernel holds the tree.
func (l *dpLab) build(b *testing.B, n int) {
	ctx := context.Background()
	be := l.open(Options{})
	start := time.Now()
	rep, err := be.Apply(ctx, dpFlows(n), plan.DefaultPolicy(dpLink).Shaper(), shaper.ApplyOptions{Strict: true})
	if err != nil {
		b.Fatalf("apply %d flows: %v", n, err)
	}
	b.Logf("built %d flow classes through Backend.Apply in %v (%d kernel writes); %v",
		n, time.Since(start).Round(time.Millisecond), rep.Writes, rep.Notes)
	act, err := be.Reconciler().Actual(ctx)
	if err != nil || act == nil {
		b.Fatalf("read the tree back: %v (tree %v)", err, act)
	}
	byMark := map[uint32]uint16{}
	for _, c := range act.Classes {
		if c.Role == shaper.RoleFlow {
			byMark[c.Mark] = c.Minor
		}
	}
	for i := 0; i < n; i++ {
		minor, ok := byMark[dpMarkBase+uint32(i)]
		if !ok {
			b.Fatalf("the kernel's tree has no flow class bound to mark %#x (%d flow classes bound)", dpMarkBase+i, len(byMark))
		}
		l.flowMinors = append(l.flowMinors, minor)
	}
	l.rec = be.Reconciler()
}

// dpCounters are the kernel's counters one run is judged by.
type dpCounters struct {
	tx      uint64            // the device's tx packets
	classes map[uint32]uint64 // packets per class id (nil: no qdisc)
	drops   uint32            // the root qdisc's drops
	qlen    uint32            // packets still queued in the root qdisc
}

func (l *dpLab) counters(b *testing.B) dpCounters {
	link, err := l.h.LinkByName(l.dev)
	if err != nil {
		b.Fatal(err)
	}
	c := dpCounters{tx: link.Attrs().Statistics.TxPackets}
	qs, err := l.h.QdiscList(link)
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range qs {
		if a := q.Attrs(); a.Parent == netlink.HANDLE_ROOT && a.Statistics != nil && a.Statistics.Queue != nil {
			c.drops, c.qlen = a.Statistics.Queue.Drops, a.Statistics.Queue.Qlen
		}
	}
	if l.rec == nil {
		return c
	}
	st, err := l.rec.ClassStats(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	c.classes = make(map[uint32]uint64, len(st))
	for id, s := range st {
		c.classes[id] = s.Packets
	}
	return c
}

// settle waits until the root qdisc has sent everything queued and
// returns the counters then.
func (l *dpLab) settle(b *testing.B) dpCounters {
	for i := 0; ; i++ {
		c := l.counters(b)
		if c.qlen == 0 {
			return c
		}
		if i == 200 {
			b.Fatalf("root qdisc on %s still holds %d packets after 2 s", l.dev, c.qlen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// benchPPS is one benchmark run: b.N ops of dpPacketsPerOp packets.
func (l *dpLab) benchPPS(b *testing.B) {
	before := l.settle(b)
	b.ResetTimer()
	r := l.tx.Run(l.cpu, b.N*dpPacketsPerOp)
	b.StopTimer()
	if r.Err != nil {
		b.Fatal(r.Err)
	}
	after := l.settle(b)
	out := after.tx - before.tx
	l.check(b, r, before, after)
	b.ReportMetric(float64(out)/r.Elapsed.Seconds(), "pps")
	b.ReportMetric(float64(r.Elapsed.Nanoseconds())/float64(out), "ns/pkt")
	b.ReportMetric(float64(r.CPU.Nanoseconds())/float64(out), "cpu-ns/pkt")
	drops := uint64(r.ENOBUFS)
	if l.rec != nil {
		drops = uint64(after.drops - before.drops) // ENOBUFS ones included
	}
	b.ReportMetric(float64(drops), "drops")
}

// check asserts that the packets went where the benchmark says they did:
// out of the device, and (with the tree) each through its own flow class.
func (l *dpLab) check(b *testing.B, r marksend.Result, before, after dpCounters) {
	out := after.tx - before.tx
	if out < uint64(r.Accepted) {
		b.Fatalf("the kernel took %d packets but %s sent %d", r.Accepted, l.dev, out)
	}
	if l.rec == nil {
		return
	}
	var flow uint64
	hit := 0
	for _, minor := range l.flowMinors {
		id := uint32(plan.OwnedMajor)<<16 | uint32(minor)
		if d := after.classes[id] - before.classes[id]; d > 0 {
			flow += d
			hit++
		}
	}
	def := uint32(plan.OwnedMajor)<<16 | uint32(plan.DefaultMinor)
	stray := after.classes[def] - before.classes[def]
	if flow != uint64(r.Accepted) || stray > 3 {
		b.Fatalf("%d packets sent: %d counted in flow classes, %d in the default class", r.Accepted, flow, stray)
	}
	if want := min(len(l.flowMinors), r.Accepted); hit != want {
		b.Fatalf("%d packets over %d marks reached %d flow classes, want %d", r.Accepted, len(l.flowMinors), hit, want)
	}
}

var regexpNoqueue = regexp.MustCompile(`qdisc noqueue 0: root`)

// BenchmarkDatapathPPS measures the packets per second one pinned core
// pushes through a veth's egress: with no qdisc (the kernel's noqueue),
// and with gtpqos's tree of 3 and 10,000 flow classes (65,518 with
// GTPQOS_BENCH_MAX=65518) built by Backend.Apply. 60-byte frames, each
// with the next flow's mark in turn; pps and ns/pkt count the packets the
// device sent over wall time, cpu-ns/pkt the sending thread's CPU time, and
// every run checks that each packet went through its own flow class. The
// peer drops the frames (foreign MAC) on the same core. Each tree is built
// once per process: -count repeats only the timed runs.
func BenchmarkDatapathPPS(b *testing.B) {
	sizes, err := dpSizes(os.Getenv(dpMaxEnv))
	if err != nil {
		b.Fatal(err)
	}
	cpu := dpCPU(b)
	testenv.RequireRoot(b)
	b.Run("none", func(b *testing.B) {
		l := newDPLab(b, 0, cpu)
		if q := l.qdiscs(b); !regexpNoqueue.MatchString(q) {
			b.Fatalf("want the kernel's noqueue root on %s, have:\n%s", l.dev, q)
		}
		b.Run("pps", l.benchPPS)
	})
	for _, n := range sizes {
		b.Run(fmt.Sprintf("htb-%d", n), func(b *testing.B) {
			l := newDPLab(b, n, cpu)
			l.build(b, n)
			b.Run("pps", l.benchPPS)
		})
	}
}
