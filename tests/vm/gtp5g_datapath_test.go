package vm

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/tests/gtp5gtest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// gtp5gGuestEnv tells the test binary inside the VM to run the guest side
// of the real-gtp5g scenarios.
const gtp5gGuestEnv = "GTPQOS_GTP5G_GUEST"

// TestVMGtp5gDatapath boots the Debian kernel with $GTP5G_KO (gtp5g v0.10.2
// plus gtp5g-patch/) loaded and runs TestGtp5gGuest inside it. Without
// GTP5G_KO it skips with one line.
func TestVMGtp5gDatapath(t *testing.T) {
	if os.Getenv("GTPQOS_IN_VM") == "1" {
		t.Skip("host-side launcher; inside the VM TestGtp5gGuest runs")
	}
	ko := RequireKO(t)
	bin := BuildTestBinary(t, "./tests/vm/")
	const name = "gtp5g_vm.test"
	res := Run(t, Config{
		Script: "set -e\n" + bin.Script(name, "-test.run", "^TestGtp5gGuest$", "-test.v", "-test.count=1",
			"-test.timeout", "9m") + "\n",
		Env:     map[string]string{gtp5gGuestEnv: "1"},
		Files:   map[string]string{name: bin.HostPath},
		KO:      ko,
		Timeout: 11 * time.Minute,
	})
	if res.ExitCode != 0 || !strings.Contains(res.Output, "--- PASS: TestGtp5gGuest") {
		t.Fatalf("guest scenario failed (exit %d); see the guest: lines above", res.ExitCode)
	}
}

// requireGtp5gGuest skips unless this is the guest run TestVMGtp5gDatapath
// started.
func requireGtp5gGuest(t *testing.T) {
	t.Helper()
	if os.Getenv("GTPQOS_IN_VM") != "1" || os.Getenv(gtp5gGuestEnv) != "1" {
		t.Skip("runs inside the VM only (started by TestVMGtp5gDatapath, TestVMGtp5gAB or TestVMGtp5gSeries with GTP5G_KO)")
	}
}

// The seed's three downlink flows (DN endpoint, QFI, GBR/MBR in kbit/s),
// plus a second UE whose only flow is also on QFI 2.
var (
	flowA = gtp5gtest.QER{QFI: 2, GBRKbps: 15000, MBRKbps: 18000}
	flowB = gtp5gtest.QER{QFI: 3, GBRKbps: 5000, MBRKbps: 6000}
	flowC = gtp5gtest.QER{QFI: 4, MBRKbps: 30000}
)

// Packets per flow and phase: distinct counts so a misclassified flow shows.
const (
	pktsA, pktsB, pktsC, pktsUE2, pktsUL = 30, 20, 10, 15, 12
	payload                              = 1200
	pktGap                               = 2 * time.Millisecond

	policerGap = 500 * time.Microsecond
	policerMBR = 1e6 // bit/s, flow B's MBR in the policer check
)

// gtp5gLab is the topology of docs/design.md "Real gtp5g datapath in the VM":
// UPF in the root namespace (upfgtp, N3 10.100.0.1, N6 10.200.0.1), gNB +
// UEs in netns gnb (rangtp in RAN role, 10.60.0.1 and 10.60.0.2 on lo),
// DN in netns dn (10.200.0.2/.3/.4).
type gtp5gLab struct {
	root, gnb, dn gtp5gtest.NS
	upf, ran      *gtp5gtest.Rules

	ueA, ueB, ueC, ue2, dnUL *udpCounter
	sA, sB, sC, s2, sUL      *udpSender
}

func newGtp5gLab(t *testing.T) *gtp5gLab {
	t.Helper()
	l := &gtp5gLab{
		root: gtp5gtest.Root(),
		gnb:  gtp5gtest.In("gnb", testenv.NewNetNS(t)),
		dn:   gtp5gtest.In("dn", testenv.NewNetNS(t)),
	}
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644); err != nil {
		t.Fatalf("enable forwarding: %v", err)
	}
	// N3: root n3 <-> gnb n3g; N6: root n6 <-> dn n6d.
	l.root.IP(t, "link", "add", "n3", "type", "veth", "peer", "name", "n3g")
	t.Cleanup(func() { _, _ = l.root.TryIP("link", "del", "n3") })
	l.root.IP(t, "link", "set", "n3g", "netns", l.gnb.NetNS.Name)
	l.root.IP(t, "link", "add", "n6", "type", "veth", "peer", "name", "n6d")
	t.Cleanup(func() { _, _ = l.root.TryIP("link", "del", "n6") })
	l.root.IP(t, "link", "set", "n6d", "netns", l.dn.NetNS.Name)
	l.root.IP(t, "addr", "add", "10.100.0.1/24", "dev", "n3")
	l.root.IP(t, "addr", "add", "10.200.0.1/24", "dev", "n6")
	l.root.IP(t, "link", "set", "n3", "up")
	l.root.IP(t, "link", "set", "n6", "up")
	l.gnb.IP(t, "addr", "add", "10.100.0.2/24", "dev", "n3g")
	l.gnb.IP(t, "link", "set", "n3g", "up")
	l.gnb.IP(t, "addr", "add", "10.60.0.1/32", "dev", "lo")
	l.gnb.IP(t, "addr", "add", "10.60.0.2/32", "dev", "lo")
	for _, a := range []string{"10.200.0.2/24", "10.200.0.3/24", "10.200.0.4/24"} {
		l.dn.IP(t, "addr", "add", a, "dev", "n6d")
	}
	l.dn.IP(t, "link", "set", "n6d", "up")
	l.dn.IP(t, "route", "add", "10.60.0.0/16", "via", "10.200.0.1")

	l.root.AddLink(t, "upfgtp", gtp5gtest.RoleUPF)
	l.root.IP(t, "route", "add", "10.60.0.0/16", "dev", "upfgtp")
	l.gnb.AddLink(t, "rangtp", gtp5gtest.RoleRAN)
	l.gnb.IP(t, "route", "add", "10.200.0.0/16", "dev", "rangtp")

	l.upf = l.root.DialRules(t, "upfgtp")
	l.ran = l.gnb.DialRules(t, "rangtp")

	l.ueA = listenUDP(t, l.gnb, "10.60.0.1:5201")
	l.ueB = listenUDP(t, l.gnb, "10.60.0.1:5202")
	l.ueC = listenUDP(t, l.gnb, "10.60.0.1:5203")
	l.ue2 = listenUDP(t, l.gnb, "10.60.0.2:5204")
	l.dnUL = listenUDP(t, l.dn, "10.200.0.2:6000")
	l.sA = dialUDP(t, l.dn, "10.200.0.2:7001", "10.60.0.1:5201")
	l.sB = dialUDP(t, l.dn, "10.200.0.3:7002", "10.60.0.1:5202")
	l.sC = dialUDP(t, l.dn, "10.200.0.4:7003", "10.60.0.1:5203")
	l.s2 = dialUDP(t, l.dn, "10.200.0.2:7004", "10.60.0.2:5204")
	l.sUL = dialUDP(t, l.gnb, "10.60.0.1:7005", "10.200.0.2:6000")
	return l
}

// programRAN installs the gNB side: downlink F-TEID PDRs (no UE IP: a PDR
// with an F-TEID is matched as uplink against the inner source) and an
// uplink PDR on the UE address encapsulating toward the UPF with TEID 200.
func (l *gtp5gLab) programRAN(t *testing.T) {
	t.Helper()
	l.ran.AddFAR(t, 0, 1, gtp5gtest.FARForward(0, ""))
	l.ran.AddFAR(t, 0, 2, gtp5gtest.FARForward(200, "10.100.0.1"))
	l.ran.AddPDR(t, 0, 1, gtp5gtest.PDR{Precedence: 10, SrcIntf: gtp5gtest.SrcAccess, FTEID: 100, FTEIDAddr: "10.100.0.2", OHR: true, FARID: 1})
	l.ran.AddPDR(t, 0, 2, gtp5gtest.PDR{Precedence: 10, SrcIntf: gtp5gtest.SrcAccess, FTEID: 101, FTEIDAddr: "10.100.0.2", OHR: true, FARID: 1})
	l.ran.AddPDR(t, 0, 3, gtp5gtest.PDR{Precedence: 10, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", FARID: 2})
}

// ruleKey identifies one event or rule for comparison.
type ruleKey struct {
	Op   string
	Kind string
	SEID uint64
	ID   uint32
}

// programUPF installs session 1 (UE 10.60.0.1: flows A/B/C downlink, one
// uplink PDR on flow A's QER) and session 2 (UE 10.60.0.2, QFI 2) the way
// go-upf orders them (QERs, FARs, then PDRs), and returns the add events
// it expects on the UPF's namespace.
func (l *gtp5gLab) programUPF(t *testing.T) []ruleKey {
	t.Helper()
	var want []ruleKey
	add := func(kind string, seid uint64, id int) {
		want = append(want, ruleKey{"add", kind, seid, uint32(id)})
	}
	for i, q := range []gtp5gtest.QER{flowA, flowB, flowC} {
		l.upf.AddQER(t, 1, i+1, q)
		add("qer", 1, i+1)
	}
	for i := 1; i <= 3; i++ {
		l.upf.AddFAR(t, 1, i, gtp5gtest.FARForward(100, "10.100.0.2"))
		add("far", 1, i)
	}
	l.upf.AddFAR(t, 1, 4, gtp5gtest.FARForward(0, ""))
	add("far", 1, 4)
	for i, src := range []string{"10.200.0.2", "10.200.0.3", "10.200.0.4"} {
		l.upf.AddPDR(t, 1, i+1, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: src,
			FARID: uint32(i + 1), QERIDs: []uint32{uint32(i + 1)}})
		add("pdr", 1, i+1)
	}
	l.upf.AddPDR(t, 1, 4, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcAccess, FTEID: 200, FTEIDAddr: "10.100.0.1", OHR: true,
		FARID: 4, QERIDs: []uint32{1}})
	add("pdr", 1, 4)

	l.upf.AddQER(t, 2, 1, flowA)
	add("qer", 2, 1)
	l.upf.AddFAR(t, 2, 1, gtp5gtest.FARForward(101, "10.100.0.2"))
	add("far", 2, 1)
	l.upf.AddPDR(t, 2, 1, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.2", SDFSrc: "10.200.0.2",
		FARID: 1, QERIDs: []uint32{1}})
	add("pdr", 2, 1)
	return want
}

// traffic sends one round of every flow and waits until the receivers got
// it; it fails the test if a datagram went missing end to end.
func (l *gtp5gLab) traffic(t *testing.T, phase string) {
	t.Helper()
	before := map[*udpCounter]int64{l.ueA: l.ueA.n.Load(), l.ueB: l.ueB.n.Load(), l.ueC: l.ueC.n.Load(),
		l.ue2: l.ue2.n.Load(), l.dnUL: l.dnUL.n.Load()}
	l.sA.send(t, pktsA, payload, pktGap)
	l.sB.send(t, pktsB, payload, pktGap)
	l.sC.send(t, pktsC, payload, pktGap)
	l.s2.send(t, pktsUE2, payload, pktGap)
	l.sUL.send(t, pktsUL, payload, pktGap)
	want := map[*udpCounter]int64{l.ueA: before[l.ueA] + pktsA, l.ueB: before[l.ueB] + pktsB,
		l.ueC: before[l.ueC] + pktsC, l.ue2: before[l.ue2] + pktsUE2, l.dnUL: before[l.dnUL] + pktsUL}
	got := waitCounts(want, 5*time.Second)
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s: receiver %s got %d datagrams, want %d (end to end through both gtp5g devices)",
				phase, c.conn.LocalAddr(), got[c]-before[c], w-before[c])
		}
	}
}

// eventStream collects QoS events from a subscription.
type eventStream struct {
	ch  chan gtpnl.Event
	err chan error
}

func subscribe(t *testing.T, c *gtpnl.Client) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sub, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatalf("subscribe to gtp5g_qos: %v", err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	s := &eventStream{ch: make(chan gtpnl.Event, 256), err: make(chan error, 1)}
	go func() {
		for {
			evs, err := sub.Receive()
			if err != nil {
				s.err <- err
				return
			}
			for _, e := range evs {
				s.ch <- e
			}
		}
	}()
	return s
}

func eventKey(e gtpnl.Event) ruleKey {
	k := ruleKey{Op: e.Op.String()}
	switch {
	case e.QER != nil:
		k.Kind, k.SEID, k.ID = "qer", e.QER.SEID, e.QER.ID
	case e.PDR != nil:
		k.Kind, k.SEID, k.ID = "pdr", e.PDR.SEID, uint32(e.PDR.ID)
	case e.FAR != nil:
		k.Kind, k.SEID, k.ID = "far", e.FAR.SEID, e.FAR.ID
	}
	return k
}

// expect waits for len(want) events and compares them, in order, with want.
func (s *eventStream) expect(t *testing.T, what string, want []ruleKey) []gtpnl.Event {
	t.Helper()
	var got []gtpnl.Event
	timeout := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case e := <-s.ch:
			got = append(got, e)
		case err := <-s.err:
			t.Fatalf("%s: receive events: %v", what, err)
		case <-timeout:
			t.Fatalf("%s: got %d of %d events within 10s", what, len(got), len(want))
		}
	}
	select {
	case e := <-s.ch:
		t.Errorf("%s: unexpected extra event %v", what, e)
	case <-time.After(300 * time.Millisecond):
	}
	keys := make([]ruleKey, len(got))
	for i, e := range got {
		keys[i] = eventKey(e)
		if e.Ifname != "upfgtp" {
			t.Errorf("%s: event %v names device %q, want upfgtp", what, e, e.Ifname)
		}
	}
	if d := cmp.Diff(want, keys); d != "" {
		t.Fatalf("%s: events (-want +got):\n%s", what, d)
	}
	return got
}

// readProc returns a /proc/gtp5g file's content.
func readProc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/gtp5g/" + name)
	if err != nil {
		t.Fatalf("read /proc/gtp5g/%s: %v", name, err)
	}
	return string(b)
}

// flowMarks returns the flow mark of each (SEID, QER id) from a dump. It
// dumps on a client of its own: gtp5g v0.10.2's dump replies lack
// NLM_F_MULTI, so the dump's NLMSG_DONE comes in a later read that
// mdlayher/netlink does not make, and a client reused after a dump reads
// that stale DONE as the reply to its next request ("mismatched sequence").
func flowMarks(t *testing.T) map[[2]uint64]uint32 {
	t.Helper()
	c, err := gtpnl.Dial()
	if err != nil {
		t.Fatalf("gtpnl dial for QER dump: %v", err)
	}
	defer c.Close()
	qers, err := c.QERs()
	if err != nil {
		t.Fatalf("dump QERs: %v", err)
	}
	m := map[[2]uint64]uint32{}
	for _, q := range qers {
		m[[2]uint64{q.SEID, uint64(q.ID)}] = q.FlowMark
	}
	return m
}

// setMarkMode switches the mark mode over genl and checks that both genl
// and /proc/gtp5g/qos_mark report it.
func setMarkMode(t *testing.T, c *gtpnl.Client, mode gtpnl.MarkMode) {
	t.Helper()
	if err := c.SetMarkMode(mode); err != nil {
		t.Fatalf("set mark mode %s: %v", mode, err)
	}
	if got, err := c.MarkMode(); err != nil || got != mode {
		t.Fatalf("mark mode after set %s: got %v, %v", mode, got, err)
	}
	if got := readProc(t, "qos_mark"); got != mode.String()+"\n" {
		t.Fatalf("/proc/gtp5g/qos_mark = %q after genl set %s", got, mode)
	}
}

// countMarks runs one round of traffic and compares the per-mark packet
// counts leaving N3 (downlink) and N6 (uplink) for the observed marks.
func (l *gtp5gLab) countMarks(t *testing.T, phase string, n3Want, n6Want map[uint32]uint64, observe []uint32) {
	t.Helper()
	n3 := newMarkCounters(t, "n3", observe)
	n6 := newMarkCounters(t, "n6", observe)
	l.traffic(t, phase)
	time.Sleep(200 * time.Millisecond)
	for _, x := range []struct {
		dev  string
		c    *markCounters
		want map[uint32]uint64
	}{{"n3", n3, n3Want}, {"n6", n6, n6Want}} {
		got := x.c.packets(t)
		for mark := range x.c.minor {
			if got[mark] != x.want[mark] {
				t.Errorf("%s: %s egress: %d packets with mark %#x, want %d (all: %v)", phase, x.dev, got[mark], mark, x.want[mark], got)
			}
		}
		t.Logf("%s: %s egress packets by mark (0 = default class): %v", phase, x.dev, got)
	}
}

// checkMarks sets the mark mode and counts one round of traffic by mark.
func (l *gtp5gLab) checkMarks(t *testing.T, c *gtpnl.Client, mode gtpnl.MarkMode, n3Want, n6Want map[uint32]uint64, observe []uint32) {
	t.Helper()
	setMarkMode(t, c, mode)
	l.countMarks(t, "mode "+mode.String(), n3Want, n6Want, observe)
}

// stockScenario is what runs when GTP5G_KO is a stock gtp5g (no features):
// the same topology and rules deliver every datagram and no packet leaving
// N3 or N6 carries a mark, the reference the patched module's "off" mode
// must match.
func stockScenario(t *testing.T) {
	l := newGtp5gLab(t)
	l.programRAN(t)
	l.programUPF(t)
	if _, err := os.Stat("/proc/gtp5g/qos_mark"); !os.IsNotExist(err) {
		t.Errorf("stock gtp5g has /proc/gtp5g/qos_mark (err %v)", err)
	}
	l.countMarks(t, "stock", map[uint32]uint64{}, map[uint32]uint64{}, []uint32{1, 2, 3, 4})
}

// TestGtp5gGuest is the real-datapath scenario, inside the VM with the
// patched gtp5g loaded: features, events for every add/update/delete,
// marks per flow in qfi and flow mode (and none when off), distinct flow
// marks for two UEs on QFI 2, and the policer switch over genl.
func TestGtp5gGuest(t *testing.T) {
	requireGtp5gGuest(t)
	c, err := gtpnl.Dial()
	if err != nil {
		t.Fatalf("gtpnl dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if v, err := c.Version(); err != nil || v != "0.10.2" {
		t.Fatalf("version: %q, %v; want 0.10.2 (the series leaves DRV_VERSION alone)", v, err)
	}
	all := gtpnl.FeatureFlowMark | gtpnl.FeatureQoSEvents | gtpnl.FeaturePolicerCtrl | gtpnl.FeatureMarkCtrl
	f, err := c.Features()
	if err != nil {
		t.Fatalf("features: %v", err)
	}
	if f == 0 {
		t.Log("stock gtp5g (no features): datapath reference run only")
		stockScenario(t)
		return
	}
	if f != all {
		t.Fatalf("features: %v; want %v", f, all)
	}
	if m, err := c.MarkMode(); err != nil || m != gtpnl.MarkOff {
		t.Fatalf("mark mode after load: %v, %v; want off", m, err)
	}

	events := subscribe(t, c)
	l := newGtp5gLab(t)
	l.programRAN(t)
	addWant := l.programUPF(t)
	adds := events.expect(t, "adds", addWant)
	for _, e := range adds {
		if e.QER != nil && e.QER.FlowMark == 0 {
			t.Errorf("add event %v: QER carries no flow mark", e)
		}
	}
	if q := adds[1].QER; q == nil || q.QFI != 3 || q.GBR.Downlink != 5_000_000 || q.MBR.Downlink != 6_000_000 {
		t.Errorf("add event for QER(1,2): %+v, want QFI 3, GBR 5 Mbit/s, MBR 6 Mbit/s downlink", adds[1].QER)
	}

	fm := flowMarks(t)
	mA, mB, mC, m2 := fm[[2]uint64{1, 1}], fm[[2]uint64{1, 2}], fm[[2]uint64{1, 3}], fm[[2]uint64{2, 1}]
	t.Logf("flow marks: A=%d B=%d C=%d UE2(QFI 2)=%d", mA, mB, mC, m2)
	if marks := uniqueMarks([]uint32{mA, mB, mC, m2}); len(marks) != 4 {
		t.Fatalf("flow marks A=%d B=%d C=%d UE2=%d: want 4 distinct non-zero values", mA, mB, mC, m2)
	}

	observe := []uint32{2, 3, 4, mA, mB, mC, m2}
	t.Run("off", func(t *testing.T) {
		l.checkMarks(t, c, gtpnl.MarkOff, map[uint32]uint64{}, map[uint32]uint64{}, observe)
	})
	t.Run("qfi", func(t *testing.T) {
		l.checkMarks(t, c, gtpnl.MarkQFI,
			map[uint32]uint64{2: pktsA + pktsUE2, 3: pktsB, 4: pktsC},
			map[uint32]uint64{2: pktsUL}, []uint32{2, 3, 4})
	})
	t.Run("flow", func(t *testing.T) {
		l.checkMarks(t, c, gtpnl.MarkFlow,
			map[uint32]uint64{mA: pktsA, mB: pktsB, mC: pktsC, m2: pktsUE2},
			map[uint32]uint64{mA: pktsUL}, []uint32{mA, mB, mC, m2})
	})
	if err := c.SetMarkMode(gtpnl.MarkOff); err != nil {
		t.Fatalf("mark mode back to off: %v", err)
	}

	t.Run("update", func(t *testing.T) {
		l.upf.UpdateQER(t, 1, 2, gtp5gtest.QER{QFI: 3, GBRKbps: 5000, MBRKbps: 7000})
		got := events.expect(t, "update", []ruleKey{{"update", "qer", 1, 2}})
		if q := got[0].QER; q.MBR.Downlink != 7_000_000 || q.FlowMark != mB {
			t.Errorf("update event QER(1,2): MBR dl %d flow mark %d, want 7000000 and unchanged %d", q.MBR.Downlink, q.FlowMark, mB)
		}
		if fm := flowMarks(t); fm[[2]uint64{1, 2}] != mB {
			t.Errorf("flow mark of QER(1,2) after update: %d, want unchanged %d", fm[[2]uint64{1, 2}], mB)
		}
	})

	t.Run("policer", func(t *testing.T) {
		// Flow B's MBR down to 1 Mbit/s; offer a few Mbit/s for ~2 s.
		l.upf.UpdateQER(t, 1, 2, gtp5gtest.QER{QFI: 3, GBRKbps: 500, MBRKbps: 1000})
		events.expect(t, "policer update", []ruleKey{{"update", "qer", 1, 2}})
		const burst = 600
		for _, on := range []bool{true, false} {
			if err := c.SetPolicer(on); err != nil {
				t.Fatalf("set policer %v: %v", on, err)
			}
			got, err := c.Policer()
			if err != nil || got != on {
				t.Fatalf("policer after set %v: %v, %v", on, got, err)
			}
			want := "QoS Enable: 0\n"
			if on {
				want = "QoS Enable: 1\n"
			}
			if p := readProc(t, "qos"); p != want {
				t.Fatalf("/proc/gtp5g/qos = %q after genl set %v, want %q", p, on, want)
			}
			before := l.ueB.n.Load()
			start := time.Now()
			l.sB.send(t, burst, payload, policerGap)
			elapsed := time.Since(start)
			delivered := waitCounts(map[*udpCounter]int64{l.ueB: before + burst}, 2*time.Second)[l.ueB] - before
			ipBytes := float64(payload + 28) // what gtp5g's policer counts
			offered := float64(burst) * ipBytes * 8 / elapsed.Seconds()
			// gtp5g's trTCM starts with full buckets: CBS = 1 s and EBS =
			// 0.2 s of MBR. Allow MBR over the send time plus both buckets,
			// +10% and a few packets.
			allowed := int64(1.1*policerMBR*(elapsed.Seconds()+1.2)/(ipBytes*8)) + 5
			t.Logf("policer %v: flow B (MBR %.0f bit/s) offered %.0f bit/s for %s, delivered %d of %d datagrams (MBR allows ~%d)",
				on, policerMBR, offered, elapsed.Round(time.Millisecond), delivered, burst, allowed)
			if offered < 2*policerMBR {
				t.Fatalf("offered only %.0f bit/s, under twice the MBR: the check would prove nothing", offered)
			}
			if on && delivered > allowed {
				t.Errorf("policer on: %d datagrams delivered, want at most %d (MBR %.0f bit/s over %s)", delivered, allowed, policerMBR, elapsed)
			}
			if !on && delivered != burst {
				t.Errorf("policer off: %d of %d datagrams delivered, want all", delivered, burst)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		l.upf.Remove(t, "pdr", 2, 1)
		l.upf.Remove(t, "far", 2, 1)
		l.upf.Remove(t, "qer", 2, 1)
		got := events.expect(t, "deletes", []ruleKey{{"delete", "pdr", 2, 1}, {"delete", "far", 2, 1}, {"delete", "qer", 2, 1}})
		if p := got[0].PDR; p.FlowMark != m2 || p.QFI != 2 || !p.PDI.UEAddr.IsValid() {
			t.Errorf("delete event PDR(2,1): %+v, want its last state (QFI 2, flow mark %d, UE address)", p, m2)
		}
		if q := got[2].QER; q.FlowMark != m2 {
			t.Errorf("delete event QER(2,1) flow mark %d, want %d", q.FlowMark, m2)
		}
		if _, ok := flowMarks(t)[[2]uint64{2, 1}]; ok {
			t.Errorf("QER(2,1) still dumped after delete")
		}
	})
	// Invalid knob values: TestGtp5gSeriesRejectsInvalid.
}
