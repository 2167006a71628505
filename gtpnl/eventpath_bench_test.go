//go:build linux

package gtpnl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/shaper/edtbackend"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
	"github.com/free5gc/gtpqos/tests/testenv"
	"github.com/free5gc/gtpqos/watch"
)

// The benchmark's flows: non-GBR (admission never refuses one), MBR 2
// Mbit/s, 3 Mbit/s for the flows added while timing (kbit/s, as gtp5g
// keeps them).
const (
	epBaseMBR  = 2000
	epAddedMBR = 3000
	// epRounds is how many sessions are added and removed per size.
	epRounds = 200
	// epMaxEnv adds the largest size: 65,518 flow classes (flows and the
	// pool's spares), minutes to build.
	epMaxEnv = "GTPQOS_BENCH_MAX"
	// epHeapEnv names a file to write each case's heap profile to, after
	// the start (PATH.<flows>; read it with go tool pprof).
	epHeapEnv = "GTPQOS_BENCH_HEAPPROFILE"
)

// epCase is one measured configuration: the backend, base flows and (htb)
// the policy's pool.
type epCase struct {
	backend     string
	flows, pool int
}

func (c epCase) String() string {
	if c.backend == edtbackend.Name {
		return fmt.Sprintf("edt/flows-%d", c.flows)
	}
	return fmt.Sprintf("flows-%d/pool-%d", c.flows, c.pool)
}

// epEdtMax is the largest edt case: its maps' million sessions.
const epEdtMax = 1_000_000

// epCases are the default cases (edt's where the kernel has sch_fq), and
// the largest with GTPQOS_BENCH_MAX set to plan.MaxClasses (htb) or to
// 1000000 (edt).
func epCases(b *testing.B) []epCase {
	cases := []epCase{{"htb", 1_000, 64}, {"htb", 1_000, 0}, {"htb", 10_000, 64}, {"htb", 10_000, 0}}
	edt := edtbackend.Probe() == nil
	if edt {
		cases = append(cases, epCase{edtbackend.Name, 1_000, 0}, epCase{edtbackend.Name, 10_000, 0})
	}
	switch v := os.Getenv(epMaxEnv); v {
	case "":
	case strconv.Itoa(plan.MaxClasses):
		cases = append(cases, epCase{"htb", plan.MaxClasses - 64, 64})
	case strconv.Itoa(epEdtMax):
		if !edt {
			b.Skipf("%s=%s: the edt backend cannot run here: %v", epMaxEnv, v, edtbackend.Probe())
		}
		cases = append(cases, epCase{edtbackend.Name, epEdtMax - 1, 0}) // room for the one added
	default:
		b.Fatalf("%s=%q: set it to %d to add the largest htb tree, or %d for edt's", epMaxEnv, v, plan.MaxClasses, epEdtMax)
	}
	return cases
}

// BenchmarkEventToClass measures `gtpqos watch`'s production path from a
// gtp5g QoS event to the flow's class in the kernel. Only gtp5g's side of
// the netlink sockets is a fake (fake_kernel_test.go): gtpnl's client,
// dumps, subscription and decoders, the watch source's per-session rule
// model and QoS view, the engine and the HTB backend opened as the daemon
// opens it (incremental, with the policy's pool of spare classes, or
// without one) run as in the daemon, on a veth in a test netns.
//
// Per case: build-s is the start from empty (a dump of every rule, then
// every class and classifier entry); heap-MB and rss-MB the process after
// it (Go heap in use after a GC; resident set, which includes the fake's
// session table); add-p50/p99-ms the time from a new session's first
// event (FAR, QER and PDR added) to its class written; remove-p50/p99-ms
// the same for its deletion; dumps/event the dumps made while adding and
// removing (0: events alone); rss-after-events-MB the resident set after
// them; then, for a periodic resync, a full one (as a reload asks) and a
// Prometheus scrape, its time and the resident set's peak while it ran,
// from the steady state (the fake answers dumps part by part, as the
// kernel does, but its garbage shares the process's heap). The engine
// runs with the daemon's memory settings (watch.TuneGC, ReleaseMemory).
// Every call builds its case (ns/op counts the build too); -benchtime 1x
// makes one call per case. GTPQOS_BENCH_HEAPPROFILE writes each case's
// heap profile after the start.
//
//	go test -run '^$' -bench EventToClass -benchtime 1x ./gtpnl/
//	GTPQOS_BENCH_MAX=65518 go test -run '^$' -bench 'EventToClass/flows-65454' -benchtime 1x -timeout 60m ./gtpnl/
func BenchmarkEventToClass(b *testing.B) {
	testenv.RequireRoot(b)
	testenv.RequireCmd(b, "ip")
	for _, c := range epCases(b) {
		b.Run(c.String(), func(b *testing.B) {
			lab := newEPLab(b, c)
			defer lab.close()
			for range b.N {
				lab.rounds(b)
			}
			// The resident set after the events, before anything returns
			// pages: where the daemon sits between resyncs.
			b.ReportMetric(procStatusMB(b, "VmRSS:"), "rss-after-events-MB")
			lab.resync(b, "periodic", func() { lab.eng.RequestDeviceResync() })
			lab.resync(b, "full", func() { lab.eng.RequestResync() })
			lab.scrape(b)
			b.ReportMetric(lab.build.Seconds(), "build-s")
			b.ReportMetric(lab.heapMB, "heap-MB")
			b.ReportMetric(lab.rssMB, "rss-MB")
		})
	}
}

// epLab is one case's running engine.
type epLab struct {
	c       epCase
	k       gtpnl.FakeKernel
	eng     *watch.Engine
	obs     *epObserver
	metrics *watch.Metrics
	cancel  context.CancelFunc
	done    chan error
	next    uint64
	cleanup []func()
	// What the start cost.
	build         time.Duration
	heapMB, rssMB float64
}

// resync times one resync of the running daemon and the resident set's
// peak while it runs (the peak before it is forgotten first, so this is
// the high-water mark an operator sees in steady state): "periodic" is
// what the daemon does every --resync interval (every device read back
// and reconciled to the kept plan, without planning again), "full" what
// lost events, a reconnect or a reload make it do (a dump of every rule,
// the QoS view of every session, a plan and a reconcile).
func (l *epLab) resync(b *testing.B, name string, request func()) {
	steadyPeak(b)
	l.obs.drain()
	t0 := time.Now()
	request()
	select {
	case <-l.obs.resyncs:
	case <-time.After(time.Minute):
		b.Fatalf("the %s resync did not start within a minute", name)
	}
	l.obs.wait(b, 30*time.Minute, "the resync's apply", func(r shaper.Report) bool { return r.Flows == l.c.flows })
	b.ReportMetric(time.Since(t0).Seconds(), name+"-resync-s")
	b.ReportMetric(procStatusMB(b, "VmHWM:"), name+"-resync-peak-rss-MB")
}

// scrape times one Prometheus scrape of the daemon's metrics (every flow
// class's counters read from the kernel and written out) and the resident
// set's peak while it runs.
func (l *epLab) scrape(b *testing.B) {
	steadyPeak(b)
	var out countingWriter
	t0 := time.Now()
	if err := l.metrics.WriteText(&out); err != nil {
		b.Fatalf("scrape: %v", err)
	}
	b.ReportMetric(time.Since(t0).Seconds(), "scrape-s")
	b.ReportMetric(procStatusMB(b, "VmHWM:"), "scrape-peak-rss-MB")
	if want := int64(4 * l.c.flows * 60); out.n < want {
		b.Fatalf("a scrape of %d flows wrote %d bytes: not every class's series", l.c.flows, out.n)
	}
}

// countingWriter counts what a scrape writes.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// steadyPeak brings the process to the daemon's steady state (the
// garbage of what ran before collected and its pages returned, as the
// daemon does after every full apply) and forgets the resident set's peak,
// so the next peak read is what the measured step added.
func steadyPeak(b *testing.B) {
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatalf("reset the resident set's peak: %v", err)
	}
}

// procStatusMB reads one of /proc/self/status's kB fields, in MB.
func procStatusMB(b *testing.B, field string) float64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatalf("read /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == field {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// epPolicy is the case's policy: a 100 Gbit/s link, 1 Mbit/s kept for
// non-GBR flows; htb's with the case's pool and FIFO leaves (the host
// kernel has no fq_codel).
func epPolicy(c epCase) shaper.Policy {
	if c.backend == edtbackend.Name {
		pol := shaper.DefaultPolicy(100e9)
		pol.NonGBRMin, pol.Backend = 1e6, c.backend
		// Maps with room for every session and the ones added.
		pol.BackendKnobs = pol.BackendKnobs.With(c.backend, shaper.Knobs{"sessions": strconv.Itoa(max(c.flows+epRounds, 65536))})
		return pol
	}
	hp := plan.DefaultPolicy(100e9)
	hp.NonGBRMin, hp.Pool = 1e6, c.pool
	hp.Leaf.Kind = plan.LeafFIFO
	return hp.Shaper()
}

// newEPLab starts the engine on c.flows sessions and waits for their
// classes and, with a pool, its spares.
func newEPLab(b *testing.B, c epCase) *epLab {
	l := &epLab{c: c, k: gtpnl.NewFakeKernel(b), obs: newEPObserver(), metrics: watch.NewMetrics(), next: uint64(c.flows) + 1}
	ns := testenv.NewNetNS(b)
	dev, peer := testenv.UniqueName("ep"), testenv.UniqueName("eq")
	ns.AddVethPair(b, dev, peer)
	h, err := netlink.NewHandleAt(ns.Handle, unix.NETLINK_ROUTE)
	if err != nil {
		b.Fatalf("netlink handle in %s: %v", ns.Name, err)
	}
	l.cleanup = append(l.cleanup, h.Close)
	pol := epPolicy(c)
	be, err := backends.Open(dev, backends.Options{Backend: c.backend, Policy: &pol, NetNS: ns.Handle, Incremental: true, N3: dev, OnPool: l.obs.pool})
	if err != nil {
		b.Fatalf("open backend on %s: %v", dev, err)
	}
	l.cleanup = append(l.cleanup, func() { _ = be.Close() })
	l.k.LoadSessions(c.flows, 0, epBaseMBR)
	src := &watch.GTP5GSource{Dial: l.k.Dial, WithEvents: true,
		View: func(q []gtpnl.QER, p []gtpnl.PDR, f []gtpnl.FAR) ([]shaper.Flow, []qosview.Problem) {
			return qosview.Build(q, p, f, qosview.Options{MarkMode: gtpnl.MarkFlow})
		}}
	// The daemon's memory settings (watch.Start): its GC target, and
	// free pages handed back after every full apply.
	watch.TuneGC()
	l.eng, err = watch.New(watch.Options{Source: src, Downlink: be, DownlinkPolicy: pol,
		Resync: time.Hour, Observer: l.obs, Metrics: l.metrics, ReleaseMemory: true})
	if err != nil {
		b.Fatalf("engine: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan error, 1)
	start := time.Now()
	go func() { l.done <- l.eng.Run(ctx) }()
	l.obs.wait(b, 30*time.Minute, "the start's classes", func(r shaper.Report) bool { return r.Flows == c.flows })
	l.build = time.Since(start)
	b.Logf("%s: %d flows installed from empty in %v", c, c.flows, l.build.Round(time.Millisecond))
	if c.pool > 0 {
		l.obs.waitPool(b, c.pool, 10*time.Minute)
	}
	l.reportMemory(b)
	return l
}

// rounds adds and removes epRounds sessions, one at a time, timing each.
func (l *epLab) rounds(b *testing.B) {
	// Reading the metrics reads every class's counters: its garbage is
	// collected before the timed rounds.
	dumps := l.dumps(b)
	runtime.GC()
	var add, remove []time.Duration
	for range epRounds {
		seid := l.next
		l.next++
		t0 := time.Now()
		l.k.SetSession(seid, 0, epAddedMBR)
		l.obs.wait(b, time.Minute, fmt.Sprintf("session %d's class", seid), func(r shaper.Report) bool {
			return hasFlow(r, seid)
		})
		add = append(add, time.Since(t0))
		t0 = time.Now()
		l.k.DeleteSession(seid)
		l.obs.wait(b, time.Minute, fmt.Sprintf("session %d's removal", seid), func(r shaper.Report) bool {
			return r.Flows == l.c.flows && len(r.Changes) > 0
		})
		remove = append(remove, time.Since(t0))
	}
	report(b, add, "add")
	report(b, remove, "remove")
	b.ReportMetric((l.dumps(b)-dumps)/float64(6*epRounds), "dumps/event")
}

func hasFlow(r shaper.Report, seid uint64) bool {
	for _, c := range r.Classes {
		if c.Role == shaper.RoleFlow && c.Flow.SEID == seid {
			return true
		}
	}
	return false
}

func report(b *testing.B, d []time.Duration, name string) {
	slices.Sort(d)
	ms := func(p float64) float64 { return float64(d[int(float64(len(d)-1)*p)].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.5), name+"-p50-ms")
	b.ReportMetric(ms(0.99), name+"-p99-ms")
}

// dumps reads gtpqos_source_dumps_total.
func (l *epLab) dumps(b *testing.B) float64 {
	fams, err := l.metrics.Registry.Gather()
	if err != nil {
		b.Fatalf("gather metrics: %v", err)
	}
	for _, f := range fams {
		if f.GetName() == "gtpqos_source_dumps_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	b.Fatal("no gtpqos_source_dumps_total metric")
	return 0
}

// reportMemory notes the Go heap in use after a GC and the resident set.
func (l *epLab) reportMemory(b *testing.B) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	l.heapMB = float64(ms.HeapInuse) / (1 << 20)
	l.rssMB = procStatusMB(b, "VmRSS:")
	if path := os.Getenv(epHeapEnv); path != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", path, l.c.flows))
		if err == nil {
			err = errors.Join(pprof.WriteHeapProfile(f), f.Close())
		}
		if err != nil {
			b.Fatalf("%s: %v", epHeapEnv, err)
		}
	}
}

func (l *epLab) close() {
	l.cancel()
	<-l.done
	for i := len(l.cleanup) - 1; i >= 0; i-- {
		l.cleanup[i]()
	}
}

// epObserver hands the engine's reports to the benchmark and follows the
// pool's background build.
type epObserver struct {
	reports chan shaper.Report
	resyncs chan struct{}
	failed  chan string
	mu      sync.Mutex
	spares  int
}

func newEPObserver() *epObserver {
	return &epObserver{reports: make(chan shaper.Report, 4096), resyncs: make(chan struct{}, 1), failed: make(chan string, 16)}
}

func (o *epObserver) Applied(_ string, rep shaper.Report, _ time.Duration) { o.reports <- rep }
func (o *epObserver) Problems(string, []shaper.Problem)                    {}
func (o *epObserver) Resync(string) {
	select {
	case o.resyncs <- struct{}{}:
	default: // the benchmark waits for one at a time
	}
}
func (o *epObserver) Recovered(string) {}
func (o *epObserver) Note(string)      {}

func (o *epObserver) Degraded(stage string, err error) {
	o.fail(fmt.Sprintf("%s failing: %v", stage, err))
}

func (o *epObserver) ViewProblems(problems []string) {
	if len(problems) > 0 {
		o.fail("the QoS view could not map: " + strings.Join(problems, "; "))
	}
}

func (o *epObserver) fail(msg string) {
	select {
	case o.failed <- msg:
	default:
	}
}

func (o *epObserver) pool(_ string, ready, _ int) {
	o.mu.Lock()
	o.spares = ready
	o.mu.Unlock()
}

// drain forgets the reports and resync notices not read yet.
func (o *epObserver) drain() {
	for {
		select {
		case <-o.reports:
		case <-o.resyncs:
		default:
			return
		}
	}
}

// wait reads reports until one satisfies done.
func (o *epObserver) wait(b *testing.B, timeout time.Duration, what string, done func(shaper.Report) bool) {
	deadline := time.After(timeout)
	for {
		select {
		case r := <-o.reports:
			if done(r) {
				return
			}
		case msg := <-o.failed:
			b.Fatalf("waiting for %s: %s", what, msg)
		case <-deadline:
			b.Fatalf("no %s after %v", what, timeout)
		}
	}
}

// waitPool waits until the pool has want spare classes.
func (o *epObserver) waitPool(b *testing.B, want int, timeout time.Duration) {
	for end := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		o.mu.Lock()
		n := o.spares
		o.mu.Unlock()
		if n >= want {
			return
		}
		if time.Now().After(end) {
			b.Fatalf("%d of %d spare classes after %v", n, want, timeout)
		}
	}
}
