package watch

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// htbLab is a veth in a throwaway netns with a real HTB tree on one end.
type htbLab struct {
	ns   *testenv.NetNS
	dev  string
	h    *netlink.Handle
	pol  plan.Policy
	peer string
}

// newHTBLab creates the netns and veth; the tree on dev is the test's.
func newHTBLab(t testing.TB, link uint64) *htbLab {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireCmd(t, "ip", "tc")
	ns := testenv.NewNetNS(t)
	dev, peer := testenv.UniqueName("wa"), testenv.UniqueName("wb")
	ns.AddVethPair(t, dev, peer)
	ns.Run(t, "ip", "addr", "add", "10.77.0.1/24", "dev", dev)
	// A static neighbour: pings to .3 leave dev (through the tree) and die
	// at the peer, so counters grow without a second namespace.
	ns.Run(t, "ip", "neigh", "add", "10.77.0.3", "lladdr", "02:00:00:00:00:03", "dev", dev)
	h, err := netlink.NewHandleAt(ns.Handle, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatalf("netlink handle in %s: %v", ns.Name, err)
	}
	t.Cleanup(h.Close)
	pol := plan.DefaultPolicy(link)
	pol.Leaf.Kind = plan.LeafFIFO // the host kernel has no fq_codel
	return &htbLab{ns: ns, dev: dev, h: h, pol: pol, peer: peer}
}

// backend returns a fresh HTB backend on the lab's device as a fresh
// daemon opens it (backends.Open, incremental), with netlink sockets of
// its own in the lab's netns; o's NetNS, Incremental and N3 are set here.
func (l *htbLab) backend(t testing.TB, o backends.Options) *htb.Backend {
	t.Helper()
	o.NetNS, o.Incremental, o.N3 = l.ns.Handle, true, l.dev
	be, err := backends.Open(l.dev, o)
	if err != nil {
		t.Fatalf("open backend on %s: %v", l.dev, err)
	}
	t.Cleanup(func() { _ = be.Close() })
	hb, ok := be.(*htb.Backend)
	if !ok {
		t.Fatalf("backends.Open gave a %T, want the HTB backend", be)
	}
	return hb
}

// options are the engine options of a daemon shaping the lab's device
// downlink with be under the lab's policy.
func (l *htbLab) options(src Source, be shaper.Backend) Options {
	return Options{Source: src, Downlink: withClassList{be}, DownlinkPolicy: l.pol.Shaper()}
}

// withClassList has full applies report the class list too, which the
// engine does not ask for (NoClassList: it reads only what changed) and
// these tests read.
type withClassList struct{ shaper.Backend }

func (w withClassList) Apply(ctx context.Context, flows []shaper.Flow, pol shaper.Policy, opt shaper.ApplyOptions) (shaper.Report, error) {
	opt.NoClassList = false
	return w.Backend.Apply(ctx, flows, pol, opt)
}

// actual reads the kernel's tree through a reconciler of its own.
func (l *htbLab) actual(t testing.TB) *plan.Tree {
	t.Helper()
	tr, err := htb.NewReconciler(l.h, l.dev, htb.Options{NetNS: l.ns.Handle}).Actual(context.Background())
	if err != nil {
		t.Fatalf("read tree on %s: %v", l.dev, err)
	}
	if tr == nil {
		t.Fatalf("no gtpqos tree on %s", l.dev)
	}
	return tr
}

// waitPool reads the kernel's tree once the pool holds the policy's
// number of spare classes (its background build has nothing left to do).
func (l *htbLab) waitPool(t testing.TB) *plan.Tree {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		tr := l.actual(t)
		spares := len(tr.Classes) - len(withoutSpares(tr).Classes)
		if spares == l.pol.Pool {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool never filled: %d of %d spare classes", spares, l.pol.Pool)
		}
	}
}

// withoutSpares returns t without the pool's spare classes.
func withoutSpares(t *plan.Tree) *plan.Tree {
	out := *t
	out.Classes = slices.DeleteFunc(slices.Clone(t.Classes), func(c plan.Class) bool { return c.Role == shaper.RoleSpare })
	return &out
}

// shape is a tree described without class ids: what each mark's class
// looks like, and the classes' roles. Two trees with the same shape are
// the same tree up to the numbering of class ids.
func shape(tr *plan.Tree) string {
	var lines []string
	for _, c := range tr.Classes {
		if c.Role == shaper.RoleSpare {
			continue // the pool's idle classes: not the rule set's
		}
		parent := "root"
		if p, ok := tr.Find(c.Parent); ok {
			parent = fmt.Sprintf("%s(%d/%d)", p.Role, p.Rate, p.Ceil)
		}
		id := c.Role.String()
		if c.Role == shaper.RoleFlow {
			id = "flow mark=" + strconv.FormatUint(uint64(c.Mark), 16)
		}
		lines = append(lines, fmt.Sprintf("%s rate=%d ceil=%d parent=%s", id, c.Rate, c.Ceil, parent))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// findHandle returns tr's class with the given handle ("6771:10").
func findHandle(tr *plan.Tree, handle string) (plan.Class, bool) {
	for _, c := range tr.Classes {
		if tr.Handle(c.Minor) == handle {
			return c, true
		}
	}
	return plan.Class{}, false
}

// wantTree plans the final rule set from scratch, as a fresh start would.
func (l *htbLab) wantTree(t testing.TB, flows []shaper.Flow) *plan.Tree {
	t.Helper()
	tr, problems := plan.Plan(downlinkOf(flows), l.pol, nil)
	if p, bad := shaper.FirstError(problems); bad {
		t.Fatalf("plan of the final rule set: %s", p.Error())
	}
	return tr
}

// tcLines counts the lines of a tc listing on the lab's device.
func (l *htbLab) tcCount(t testing.TB, what string) int {
	t.Helper()
	out := l.ns.Run(t, "tc", what, "show", "dev", l.dev)
	return strings.Count(out, "\n")
}

// sessionFlows builds session seid's flows in one of a few variants:
// a GBR flow, non-GBR flows under a session AMBR, or nothing.
func sessionFlows(seid uint64, variant int) []shaper.Flow {
	mk := func(qer uint32, qfi uint8, gbr, mbr, ambr uint64) shaper.Flow {
		f := flow(seid, qer, qfi, gbr, mbr)
		f.SessionAMBR = ambr
		return f
	}
	switch variant % 4 {
	case 0:
		return []shaper.Flow{mk(1, 1, 2e6, 4e6, 0)}
	case 1:
		return []shaper.Flow{mk(1, 1, 2e6, 4e6, 20e6), mk(2, 5, 0, 8e6, 20e6), mk(3, 9, 0, 0, 20e6)}
	case 2:
		return []shaper.Flow{mk(1, 1, 1e6, 3e6, 10e6), mk(2, 5, 0, 6e6, 10e6)}
	default:
		return nil
	}
}

// waitShape waits until the kernel's tree has the shape of want.
func (l *htbLab) waitShape(t testing.TB, want *plan.Tree, what string) {
	t.Helper()
	var got string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		tr, err := htb.NewReconciler(l.h, l.dev, htb.Options{NetNS: l.ns.Handle}).Actual(context.Background())
		if err != nil {
			t.Fatalf("read tree on %s: %v", l.dev, err)
		}
		if tr != nil {
			if got = shape(tr); got == shape(want) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: kernel tree never matched the plan of the final rule set\ngot:\n%s\nwant:\n%s", what, got, shape(want))
}

func TestHTBScriptedStormsConverge(t *testing.T) {
	l := newHTBLab(t, 1e9)
	src := newScriptedSource()
	be := l.backend(t, backends.Options{})
	obs := &recObserver{}
	opt := l.options(src, be)
	opt.Resync, opt.Observer = time.Hour, obs
	startEngine(t, opt)

	// Add storm: 60 sessions arrive, each QER as its own event.
	for s := uint64(1); s <= 60; s++ {
		fl := sessionFlows(s, int(s))
		for i := range fl {
			src.change(s, fl[:i+1]...)
		}
	}
	l.waitShape(t, l.wantTree(t, src.all()), "add storm")

	// Update storm with duplicates: rates change, variants change shape
	// (a session gains or loses its AMBR), every event sent twice.
	for s := uint64(1); s <= 60; s++ {
		src.change(s, sessionFlows(s, int(s)+1)...)
		src.emit(Event{Kind: EventChange, SEID: s})
	}
	l.waitShape(t, l.wantTree(t, src.all()), "update storm")

	// Out of order: a delete's event arrives before the add's, for a
	// session that ends up present; and a delete for one never added.
	src.emit(Event{Kind: EventChange, SEID: 500})
	src.set(500, sessionFlows(500, 1)...)
	src.emit(Event{Kind: EventChange, SEID: 500})
	src.emit(Event{Kind: EventChange, SEID: 501})

	// ENOBUFS in the middle of a delete storm: some deletions never get
	// an event, and the source says events were lost.
	for s := uint64(1); s <= 60; s += 2 {
		if s%3 == 0 {
			src.set(s) // lost
		} else {
			src.change(s)
		}
		if s == 31 {
			src.emit(Event{Kind: EventResync, Err: errors.New("ENOBUFS")})
		}
	}
	want := l.wantTree(t, src.all())
	l.waitShape(t, want, "delete storm with ENOBUFS")

	// No leaks: exactly the planned classes (and the pool's spares, at
	// most its size), one classifier entry per flow (the bindings),
	// nothing pointing at a deleted class. The pool grows in the
	// background after the last change: count once it is full, so the
	// kernel's classes and tc's listing are of the same moment.
	got := l.waitPool(t)
	nw := withoutSpares(got)
	if len(nw.Classes) != len(want.Classes) || len(got.Classes)-len(nw.Classes) > l.pol.Pool {
		t.Fatalf("%d classes in the kernel (%d spares), %d planned, pool %d", len(got.Classes), len(got.Classes)-len(nw.Classes), len(want.Classes), l.pol.Pool)
	}
	if n := l.tcCount(t, "class"); n != len(got.Classes) {
		t.Fatalf("tc class show lists %d classes, the tree read back %d", n, len(got.Classes))
	}
	marks := 0
	for _, c := range got.Classes {
		if c.Role == shaper.RoleFlow && c.Mark != 0 {
			marks++
		}
	}
	if wantMarks := len(want.FlowClasses()); marks != wantMarks {
		t.Fatalf("%d flow classes with a classifier binding, want %d", marks, wantMarks)
	}
	if o := obs.snapshot(); !slices.ContainsFunc(o.resyncs, func(r string) bool { return strings.Contains(r, "ENOBUFS") }) {
		t.Fatalf("no resync for the ENOBUFS (resyncs %q)", o.resyncs)
	}
}

// classBytes returns the sent-bytes counter of every flow class of rep
// (the backend's last report), by class handle: the backend's counters
// joined with the report's classes, as the metrics do.
func classBytes(t testing.TB, be shaper.Backend, rep shaper.Report) map[string]uint64 {
	t.Helper()
	st, err := be.Counters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, c := range flowClasses(rep) {
		if s, ok := st[c.Handle]; ok {
			out[c.Handle] = s.Bytes
		}
	}
	return out
}

// send sends count marked UDP packets out of the lab's device, from a
// socket opened inside the lab's netns.
func (l *htbLab) send(t testing.TB, mark uint32, count int) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread stays in the lab's netns: never unlocked, so it dies with the goroutine
		if err := netns.Set(l.ns.Handle); err != nil {
			errc <- err
			return
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_MARK, int(mark)); err != nil {
			errc <- err
			return
		}
		to := &unix.SockaddrInet4{Port: 9, Addr: [4]byte{10, 77, 0, 3}}
		buf := make([]byte, 500)
		for range count {
			if err := unix.Sendto(fd, buf, 0, to); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatalf("send marked packets in %s: %v", l.ns.Name, err)
	}
}

// changeLog records the changes an engine reports.
type changeLog struct {
	recObserver
	mu      sync.Mutex
	changes []shaper.Change
	writes  int
}

func (c *changeLog) Applied(dev string, rep shaper.Report, d time.Duration) {
	c.mu.Lock()
	c.changes = append(c.changes, rep.Changes...)
	c.writes += rep.Writes
	c.mu.Unlock()
	c.recObserver.Applied(dev, rep, d)
}

func (c *changeLog) classOps() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, ch := range c.changes {
		if ch.Object == "class" || ch.Object == "qdisc" {
			out = append(out, ch.String())
		}
	}
	return out
}

func TestHTBRestartAdoptsLiveTree(t *testing.T) {
	l := newHTBLab(t, 1e9)
	src := newScriptedSource()
	for s := uint64(1); s <= 6; s++ {
		src.set(s, sessionFlows(s, int(s))...)
	}
	flows := downlinkOf(src.all())

	// First daemon.
	be1 := l.backend(t, backends.Options{})
	obs1 := &recObserver{}
	opt1 := l.options(src, be1)
	opt1.Resync, opt1.Observer = time.Hour, obs1
	e1, err := New(opt1)
	if err != nil {
		t.Fatal(err)
	}
	ctx1, stop1 := context.WithCancel(context.Background())
	done1 := make(chan error, 1)
	go func() { done1 <- e1.Run(ctx1) }()
	want := l.wantTree(t, src.all())
	l.waitShape(t, want, "first start")
	rep1 := obs1.waitReport(t, l.dev, 10*time.Second, "first daemon's report", func(r shaper.Report) bool { return hasFlows(r, flows) })
	for _, f := range flows {
		l.send(t, f.Mark, 20)
	}
	before := classBytes(t, be1, rep1)
	before1 := l.actual(t)
	stop1() // SIGTERM: classes stay
	if err := <-done1; err != nil {
		t.Fatalf("first daemon: %v", err)
	}
	_ = be1.Close() // the process exits: its background work ends too
	if got := shape(l.actual(t)); got != shape(want) {
		t.Fatalf("tree changed when the daemon stopped:\n%s", got)
	}

	// Second daemon over the live tree.
	be2 := l.backend(t, backends.Options{})
	log := &changeLog{}
	opt2 := l.options(src, be2)
	opt2.Resync, opt2.Observer = time.Hour, log
	startEngine(t, opt2)
	eventually(t, 10*time.Second, "second daemon's first reconcile", func() bool { return log.snapshot().applied >= 1 })
	if ops := log.classOps(); len(ops) != 0 {
		t.Fatalf("restart touched classes (must adopt them): %q", ops)
	}
	log.mu.Lock()
	writes, changes := log.writes, slices.Clone(log.changes)
	log.mu.Unlock()
	if writes != 0 {
		t.Fatalf("restart made %d kernel writes (must adopt the tree and its classifier as they are): %v", writes, changes)
	}
	rep2, _ := log.report(l.dev)
	for _, f := range flows {
		a, _ := rep1.FlowClass(f.ID)
		b, ok := rep2.FlowClass(f.ID)
		if !ok || a.Handle != b.Handle {
			t.Fatalf("flow %s: class %s before the restart, %s after (want the same)", f.ID, a.Handle, b.Handle)
		}
	}
	// The pool may grow meanwhile; every other class must be as it was.
	b1, a1 := withoutSpares(before1), withoutSpares(l.actual(t))
	if shape(a1) != shape(b1) || len(a1.Classes) != len(b1.Classes) {
		t.Fatalf("tree differs after restart")
	}
	for i := range b1.Classes {
		if b1.Classes[i].Minor != a1.Classes[i].Minor {
			t.Fatalf("class ids changed across the restart: %v -> %v", b1.Classes[i], a1.Classes[i])
		}
	}
	for _, f := range flows {
		l.send(t, f.Mark, 20)
	}
	after := classBytes(t, be2, rep2)
	if len(before) != len(flows) {
		t.Fatalf("%d flow classes counted before restart, want %d", len(before), len(flows))
	}
	for cls, b := range before {
		if b == 0 {
			t.Errorf("class %s counted nothing before the restart: traffic not classified", cls)
		}
		if after[cls] <= b {
			t.Errorf("class %s: %d bytes before restart, %d after: counters must keep growing", cls, b, after[cls])
		}
	}
}

func TestHTBDriftRepairedWithinResync(t *testing.T) {
	l := newHTBLab(t, 1e9)
	src := newScriptedSource()
	for s := uint64(1); s <= 4; s++ {
		src.set(s, sessionFlows(s, int(s))...)
	}
	const resync = 500 * time.Millisecond
	be := l.backend(t, backends.Options{})
	obs := &recObserver{}
	opt := l.options(src, be)
	opt.Resync, opt.Observer = resync, obs
	startEngine(t, opt)
	want := l.wantTree(t, src.all())
	l.waitShape(t, want, "start")
	rep := obs.waitReport(t, l.dev, 10*time.Second, "start reported", func(r shaper.Report) bool {
		return hasFlows(r, downlinkOf(src.all()))
	})

	victim := flowClasses(rep)[0]
	// Behind the daemon's back: a class deleted, another one's ceil
	// changed.
	l.ns.Run(t, "tc", "class", "del", "dev", l.dev, "classid", victim.Handle)
	other := flowClasses(rep)[1]
	l.ns.Run(t, "tc", "class", "change", "dev", l.dev, "parent", other.Parent,
		"classid", other.Handle, "htb", "rate", "8kbit", "ceil", "8kbit")
	deleted := time.Now()
	if shape(l.actual(t)) == shape(want) {
		t.Fatal("tc did not change the tree")
	}
	l.waitShape(t, want, "drift repair")
	if took := time.Since(deleted); took > resync+time.Second {
		t.Fatalf("drift repaired after %v, want within one resync interval (%v) plus a reconcile", took, resync)
	}
	// While events flow, a periodic resync reads the device, not the
	// source: its events keep the engine's flows exact.
	src.mu.Lock()
	dumps := src.snapshots
	src.mu.Unlock()
	if periodic := strings.Count(strings.Join(obs.snapshot().resyncs, ","), "periodic"); periodic == 0 || dumps != 1 {
		t.Errorf("%d periodic resyncs made %d dumps besides the start's, want some and none", periodic, dumps-1)
	}
}

func TestHTBDeviceGoneAndBackIsRebuilt(t *testing.T) {
	l := newHTBLab(t, 1e9)
	src := newScriptedSource()
	for s := uint64(1); s <= 4; s++ {
		src.set(s, sessionFlows(s, int(s))...)
	}
	be := l.backend(t, backends.Options{})
	obs := &recObserver{}
	opt := l.options(src, be)
	opt.Retry, opt.Resync, opt.Observer = 50*time.Millisecond, 200*time.Millisecond, obs
	startEngine(t, opt)
	want := l.wantTree(t, src.all())
	l.waitShape(t, want, "start")

	// The interface disappears (and its tree with it): the engine keeps
	// running, reports the outage once, and keeps retrying.
	l.ns.Run(t, "ip", "link", "del", l.dev)
	eventually(t, 10*time.Second, "outage reported", func() bool {
		return slices.Contains(obs.snapshot().degraded, l.dev)
	})
	// Sessions change while it is gone.
	src.change(2)
	src.change(7, sessionFlows(7, 1)...)
	time.Sleep(300 * time.Millisecond)
	if n := strings.Count(strings.Join(obs.snapshot().degraded, ","), l.dev); n != 1 {
		t.Fatalf("outage reported %d times, want once (no per-retry noise)", n)
	}

	// It comes back: the tree is rebuilt for the current rule set.
	l.ns.AddVethPair(t, l.dev, l.peer)
	l.waitShape(t, l.wantTree(t, src.all()), "rebuild after the device came back")
	eventually(t, 5*time.Second, "recovery reported", func() bool {
		return slices.Contains(obs.snapshot().recovered, l.dev)
	})
	got := l.actual(t)
	marks := 0
	for _, c := range got.Classes {
		if c.Role == shaper.RoleFlow && c.Mark != 0 {
			marks++
		}
	}
	if want := len(downlinkOf(src.all())); marks != want {
		t.Fatalf("%d flow classes bound by the classifier after the rebuild, want %d", marks, want)
	}
	// And the classifier really works on the new device: marked packets
	// land in their flows' classes.
	l.ns.Run(t, "ip", "addr", "add", "10.77.0.1/24", "dev", l.dev)
	l.ns.Run(t, "ip", "neigh", "add", "10.77.0.3", "lladdr", "02:00:00:00:00:03", "dev", l.dev)
	for _, f := range downlinkOf(src.all()) {
		l.send(t, f.Mark, 5)
	}
	rep := obs.waitReport(t, l.dev, 10*time.Second, "the rebuild reported", func(r shaper.Report) bool {
		return hasFlows(r, downlinkOf(src.all()))
	})
	counted := classBytes(t, be, rep)
	if len(counted) != len(downlinkOf(src.all())) {
		t.Fatalf("counters for %d flow classes, want %d", len(counted), len(downlinkOf(src.all())))
	}
	for cls, b := range counted {
		if b == 0 {
			t.Errorf("class %s counted nothing after the rebuild: traffic not classified on the new device", cls)
		}
	}
}

func TestHTBCleanupOnExitRemovesTree(t *testing.T) {
	l := newHTBLab(t, 1e9)
	src := newScriptedSource()
	src.set(1, sessionFlows(1, 1)...)
	be := l.backend(t, backends.Options{})
	opt := l.options(src, be)
	opt.Resync = time.Hour
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	l.waitShape(t, l.wantTree(t, src.all()), "start")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// --cleanup-on-exit
	if err := e.Cleanup(context.Background()); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	tr, err := htb.NewReconciler(l.h, l.dev, htb.Options{NetNS: l.ns.Handle}).Actual(context.Background())
	if err != nil || tr != nil {
		t.Fatalf("after cleanup: tree %v, err %v; want no gtpqos tree", tr, err)
	}
	if out := l.ns.Run(t, "tc", "class", "show", "dev", l.dev); strings.TrimSpace(out) != "" {
		t.Fatalf("classes left after cleanup:\n%s", out)
	}
}
