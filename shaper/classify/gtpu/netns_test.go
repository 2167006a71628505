package gtpu

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// udpIn opens a UDP socket bound to laddr inside ns, with SO_PRIORITY prio
// (0 = unset). The socket stays in ns after the thread returns.
func udpIn(t *testing.T, ns *testenv.NetNS, laddr string, prio int) *net.UDPConn {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	if err := netns.Set(ns.Handle); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic("cannot return to the original netns: " + err.Error())
		}
	}()
	a, err := net.ResolveUDPAddr("udp4", laddr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp4", a)
	if err != nil {
		t.Fatalf("netns %s: listen %s: %v", ns.Name, laddr, err)
	}
	t.Cleanup(func() { c.Close() })
	if prio != 0 {
		rc, _ := c.SyscallConn()
		var serr error
		_ = rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PRIORITY, prio) })
		if serr != nil {
			t.Fatal(serr)
		}
	}
	return c
}

// gtpPayload is a G-PDU (the UDP payload) for teid/qfi as gtp5g writes it.
func gtpPayload(teid uint32, qfi byte) []byte {
	b := pkt{teid: teid, exts: []extHdr{pdu(qfi)}}.build()
	return b[14+20+8:]
}

func send(t *testing.T, c *net.UDPConn, to string, payload []byte, n int) {
	t.Helper()
	a, err := net.ResolveUDPAddr("udp4", to)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := c.WriteToUDP(payload, a); err != nil {
			t.Fatalf("send to %s: %v", to, err)
		}
	}
}

// classPackets returns packets sent per class minor under major 6771 on dev.
func classPackets(t *testing.T, h *netlink.Handle, link netlink.Link) map[uint16]uint64 {
	t.Helper()
	cls, err := h.ClassList(link, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint16]uint64{}
	for _, c := range cls {
		a := c.Attrs()
		if a.Handle>>16 == testMajor && a.Statistics != nil && a.Statistics.Basic != nil {
			out[uint16(a.Handle)] = uint64(a.Statistics.Basic.Packets)
		}
	}
	return out
}

// htb builds a gtpqos-like HTB tree on dev with tc (tests may use tc):
// root 6771: default 2, link class 1, leaves 2 and the given minors.
func htb(t *testing.T, ns *testenv.NetNS, dev string, minors ...uint16) {
	t.Helper()
	ns.Run(t, "tc", "qdisc", "add", "dev", dev, "root", "handle", "6771:", "htb", "default", "2")
	ns.Run(t, "tc", "class", "add", "dev", dev, "parent", "6771:", "classid", "6771:1", "htb", "rate", "1gbit")
	for _, m := range append([]uint16{2}, minors...) {
		ns.Run(t, "tc", "class", "add", "dev", dev, "parent", "6771:1", "classid", fmt.Sprintf("6771:%x", m), "htb", "rate", "100mbit", "ceil", "1gbit")
	}
}

// testMajor is the root qdisc major the tests' HTB trees use.
const testMajor = 0x6771

func flowClass(minor uint16, seid uint64, teid uint32, qfi uint8, mark uint32) classify.Entry {
	return classify.Entry{ClassID: testMajor<<16 | uint32(minor),
		Flow: shaper.FlowID{SEID: seid, QERID: uint32(minor)}, TEID: teid, QFI: qfi, Mark: mark}
}

func tree(entries ...classify.Entry) classify.Table {
	return classify.Table{Default: testMajor<<16 | 2, Entries: entries}
}

// waitPackets polls the class counters until want holds or 2 s pass.
func waitPackets(t *testing.T, h *netlink.Handle, link netlink.Link, want map[uint16]uint64) map[uint16]uint64 {
	t.Helper()
	var got map[uint16]uint64
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		got = classPackets(t, h, link)
		ok := true
		for m, n := range want {
			if got[m] < n {
				ok = false
			}
		}
		if ok {
			break
		}
	}
	return got
}

// Downlink through the real kernel path: packets leave a veth with HTB
// on it; gtpu_egress must put two sessions that both use QFI 2 into their
// own classes, unknown GTP-U into the default class, and leave non-GTP
// traffic's priority alone.
func TestDownlinkClassifiesOnVeth(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	loadForTest(t) // skip early if the kernel refuses BPF
	ns := testenv.NewNetNS(t)
	a, b := testenv.UniqueName("gq3a"), testenv.UniqueName("gq3b")
	ns.AddVethPair(t, a, b)
	ns.Run(t, "ip", "addr", "add", "10.99.0.1/24", "dev", a)
	ns.Run(t, "ip", "addr", "add", "10.99.0.2/24", "dev", b)
	ns.Run(t, "ip", "neigh", "replace", "10.99.0.9", "lladdr", "02:00:00:00:00:09", "dev", a, "nud", "permanent")
	htb(t, ns, a, 0x10, 0x11, 0x12)
	h, env := classifierEnv(t, ns, a)
	c := New(Options{N3: a})
	defer c.Close(h)
	dl := c.Downlink()
	desired := tree(flowClass(0x10, 1, 100, 2, 0), flowClass(0x11, 2, 200, 2, 0))
	res, err := dl.Sync(t.Context(), env, desired)
	if err != nil {
		t.Fatal(err)
	}
	if res.Added != 2 || res.Writes == 0 {
		t.Errorf("first sync: %+v, want 2 entries added", res)
	}
	if res, err := dl.Sync(t.Context(), env, desired); err != nil || res.Writes != 0 {
		t.Errorf("second sync: %+v, %v; want no writes", res, err)
	}
	bs, err := dl.Bindings(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	want := []classify.Binding{{Minor: 0x10, TEID: 100, QFI: 2}, {Minor: 0x11, TEID: 200, QFI: 2}}
	if fmt.Sprint(bs) != fmt.Sprint(want) {
		t.Errorf("bindings %v, want %v", bs, want)
	}
	// A process that loaded nothing (after a restart, or 'verify') reads
	// the attached program's maps by id.
	if bs, err := New(Options{N3: a}).Downlink().Bindings(t.Context(), env); err != nil || fmt.Sprint(bs) != fmt.Sprint(want) {
		t.Errorf("bindings read from the attached program: %v, %v; want %v", bs, err, want)
	}

	gtp := udpIn(t, ns, "10.99.0.1:2152", 0)
	other := udpIn(t, ns, "10.99.0.1:0", 0x67710012) // SO_PRIORITY names class 12
	send(t, gtp, "10.99.0.9:2152", gtpPayload(100, 2), 5)
	send(t, gtp, "10.99.0.9:2152", gtpPayload(200, 2), 7)
	send(t, gtp, "10.99.0.9:2152", gtpPayload(300, 2), 3)               // unknown session
	send(t, other, "10.99.0.9:9999", []byte("not gtp"), 4)              // untouched
	send(t, other, "10.99.0.9:2152", []byte{0, 1, 2, 3, 4, 5, 6, 7}, 2) // not GTPv1: untouched
	got := waitPackets(t, h, env.Link, map[uint16]uint64{0x10: 5, 0x11: 7, 0x12: 6, 2: 3})
	if got[0x10] != 5 || got[0x11] != 7 || got[0x12] != 6 || got[2] < 3 {
		t.Errorf("class packets %v, want 16:5 17:7 18:6 (untouched priority) 2:>=3 (default), minors in decimal", got)
	}
	st, err := c.Objects().Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Downlink.Hit != 12 || st.Downlink.Miss != 3 {
		t.Errorf("program counters %+v, want 12 hits, 3 misses", st.Downlink)
	}
	snap, err := ReadAttached(h, env.Link, Egress)
	if err != nil || snap == nil {
		t.Fatalf("ReadAttached: %v, %v", snap, err)
	}
	// Hits and misses only: NotGTP also counts the stray packets (IPv6
	// neighbour discovery) that may pass between the two reads.
	if a, b := snap.Stats.Downlink, st.Downlink; a.Hit != b.Hit || a.Miss != b.Miss || a.SDFHit != b.SDFHit || snap.DefaultClass != 0x67710002 {
		t.Errorf("attached program: stats %+v default %#x, want %+v and 0x67710002", snap.Stats.Downlink, snap.DefaultClass, st.Downlink)
	}

	if err := dl.Remove(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	if out := ns.Run(t, "tc", "qdisc", "show", "dev", a); strings.Contains(out, "clsact") {
		t.Errorf("clsact left after Remove:\n%s", out)
	}
}

// A clsact qdisc and filters someone else made survive Attach and Detach;
// a foreign filter at our priority makes Sync fail naming it.
func TestAttachLeavesForeignObjects(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	loadForTest(t)
	ns := testenv.NewNetNS(t)
	a, b := testenv.UniqueName("gq3a"), testenv.UniqueName("gq3b")
	ns.AddVethPair(t, a, b)
	ns.Run(t, "tc", "qdisc", "add", "dev", a, "clsact")
	// A classic-BPF filter that matches nothing, at priority 1.
	ns.Run(t, "tc", "filter", "add", "dev", a, "egress", "prio", "1", "handle", "1", "bpf", "bytecode", "1,6 0 0 0,")
	h, env := classifierEnv(t, ns, a)
	c := New(Options{N3: a})
	defer c.Close(h)
	if _, err := c.Downlink().Sync(t.Context(), env, tree(flowClass(0x10, 1, 100, 2, 0))); err != nil {
		t.Fatal(err)
	}
	out := ns.Run(t, "tc", "filter", "show", "dev", a, "egress")
	if !strings.Contains(out, "pref 1 ") || !strings.Contains(out, "gtpqos-gtpu-egress") {
		t.Errorf("want the foreign filter (pref 1) and ours:\n%s", out)
	}
	if err := c.Downlink().Remove(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	out = ns.Run(t, "tc", "filter", "show", "dev", a, "egress")
	if !strings.Contains(out, "pref 1 ") || strings.Contains(out, "gtpqos") {
		t.Errorf("after Remove want only the foreign filter:\n%s", out)
	}
	if q := ns.Run(t, "tc", "qdisc", "show", "dev", a); !strings.Contains(q, "clsact") {
		t.Errorf("foreign clsact deleted:\n%s", q)
	}

	ns.Run(t, "tc", "filter", "add", "dev", a, "egress", "prio", fmt.Sprint(FilterPriority), "handle", "1", "bpf", "bytecode", "1,6 0 0 0,")
	_, err := New(Options{N3: a}).Downlink().Sync(t.Context(), env, tree())
	if err == nil || !strings.Contains(err.Error(), "does not own") || !strings.Contains(err.Error(), a) {
		t.Errorf("sync over a foreign filter at our priority: err %v, want one naming dev %s and 'does not own'", err, a)
	}
}

// Uplink through the real kernel path: GTP-U arrives on N3 (gnb netns ->
// upf netns), gtpu_ingress marks it, the upf netns forwards it out of N6
// (standing in for gtp5g's decapsulation: the mark must survive the trip
// inside one netns), and mark_egress + HTB on N6 put each session's QFI-2
// flow into its own class.
func TestUplinkMarksSurviveForwarding(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	loadForTest(t)
	gnb, upf, dn := testenv.NewNetNS(t), testenv.NewNetNS(t), testenv.NewNetNS(t)
	n3, n3peer := testenv.UniqueName("gq3u"), testenv.UniqueName("gq3g")
	n6, n6peer := testenv.UniqueName("gq6u"), testenv.UniqueName("gq6d")
	upf.Run(t, "ip", "link", "add", n3, "type", "veth", "peer", "name", n3peer, "netns", gnb.Name)
	upf.Run(t, "ip", "link", "add", n6, "type", "veth", "peer", "name", n6peer, "netns", dn.Name)
	for _, x := range []struct {
		ns        *testenv.NetNS
		dev, addr string
	}{{upf, n3, "10.99.0.1/24"}, {gnb, n3peer, "10.99.0.2/24"}, {upf, n6, "10.98.0.1/24"}, {dn, n6peer, "10.98.0.2/24"}} {
		x.ns.Run(t, "ip", "addr", "add", x.addr, "dev", x.dev)
		x.ns.Run(t, "ip", "link", "set", x.dev, "up")
	}
	gnb.Run(t, "ip", "route", "add", "10.98.0.0/24", "via", "10.99.0.1")
	upf.Run(t, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	htb(t, upf, n6, 0x10, 0x11)

	h, env := classifierEnv(t, upf, n6)
	c := New(Options{N3: n3})
	defer c.Close(h)
	ul := c.Uplink()
	desired := tree(flowClass(0x10, 1, 100, 2, 0x1001), flowClass(0x11, 2, 200, 2, 0x1002))
	if _, err := ul.Sync(t.Context(), env, desired); err != nil {
		t.Fatal(err)
	}
	if res, err := ul.Sync(t.Context(), env, desired); err != nil || res.Writes != 0 {
		t.Errorf("second sync: %+v, %v; want no writes", res, err)
	}
	bs, err := ul.Bindings(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	if want := []classify.Binding{{Minor: 0x10, Mark: 0x1001, TEID: 100, QFI: 2}, {Minor: 0x11, Mark: 0x1002, TEID: 200, QFI: 2}}; fmt.Sprint(bs) != fmt.Sprint(want) {
		t.Errorf("bindings %v, want %v", bs, want)
	}

	s := udpIn(t, gnb, "10.99.0.2:2152", 0)
	send(t, s, "10.98.0.2:2152", gtpPayload(100, 2), 5)
	send(t, s, "10.98.0.2:2152", gtpPayload(200, 2), 7)
	send(t, s, "10.98.0.2:2152", gtpPayload(300, 2), 3) // unknown session: no mark
	got := waitPackets(t, h, env.Link, map[uint16]uint64{0x10: 5, 0x11: 7, 2: 3})
	if got[0x10] != 5 || got[0x11] != 7 || got[2] < 3 {
		t.Errorf("N6 class packets %v, want 16:5 17:7 2:>=3 (minors in decimal)", got)
	}

	if err := ul.Remove(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct{ dev, hook string }{{n3, "ingress"}, {n6, "egress"}} {
		if out := upf.Run(t, "tc", "filter", "show", "dev", x.dev, x.hook); strings.Contains(out, "gtpqos") {
			t.Errorf("dev %s %s: filter left after Remove:\n%s", x.dev, x.hook, out)
		}
	}
}

// classifierEnv opens a netlink handle in ns (closed when the test ends)
// and returns it with the classifier environment for dev under gtpqos's
// HTB root.
func classifierEnv(t *testing.T, ns *testenv.NetNS, dev string) (*netlink.Handle, classify.Env) {
	t.Helper()
	h, err := netlink.NewHandleAt(ns.Handle, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	return h, classify.Env{Handle: h, Link: link, Root: testMajor << 16}
}
