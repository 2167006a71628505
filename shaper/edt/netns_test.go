package edt

import (
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/testenv"
)

const vethMajor = 0x6771

// Real packets through a veth with HTB on it (pfifo leaves: this host has
// no fq, so nothing holds a packet until its tstamp and pacing itself is
// not observable here; the PROG_TEST_RUN tests check the arithmetic). It
// checks what the kernel does with what the program sets: HTB takes
// skb->priority as the class (guaranteed / non-GBR / default counters
// match the program's), horizon drops never reach the peer, and the
// tstamp crosses into the peer's namespace as a CLOCK_MONOTONIC delivery
// time, unchanged (a plain write would be cleared on the way).
func TestVethClassesDropsTstamp(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	p := loadForTest(t, LoadOptions{Sessions: 16, Flows: 16, Marks: 16, Overhead: 14}) // N6: Ethernet
	nsA, nsB := testenv.NewNetNS(t), testenv.NewNetNS(t)
	a, b := testenv.UniqueName("edta"), testenv.UniqueName("edtb")
	nsA.Run(t, "ip", "link", "add", a, "type", "veth", "peer", "name", b, "netns", nsB.Name)
	for _, c := range []struct {
		ns   *testenv.NetNS
		dev  string
		addr string
	}{{nsA, a, "10.97.0.1/24"}, {nsB, b, "10.97.0.2/24"}} {
		c.ns.Run(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
		c.ns.Run(t, "ip", "addr", "add", c.addr, "dev", c.dev)
		c.ns.Run(t, "ip", "link", "set", c.dev, "up")
	}
	nsA.Run(t, "tc", "qdisc", "add", "dev", a, "root", "handle", "6771:", "htb", "default", "2")
	nsA.Run(t, "tc", "class", "add", "dev", a, "parent", "6771:", "classid", "6771:1", "htb", "rate", "1gbit")
	for _, m := range []string{"2", "10", "11"} {
		nsA.Run(t, "tc", "class", "add", "dev", a, "parent", "6771:1", "classid", "6771:"+m, "htb", "rate", "100mbit", "ceil", "1gbit")
	}
	if err := p.SetDefaultClass(vethMajor<<16 | 2); err != nil {
		t.Fatal(err)
	}
	const (
		gbrClass = vethMajor<<16 | 0x10
		nonGBR   = vethMajor<<16 | 0x11
	)
	for id, s := range map[uint32]FlowSpec{
		1: {Marks: []uint32{0x10}, MBR: 1_000_000, DelayBudget: time.Hour, Class: nonGBR},
		2: {Marks: []uint32{0x20}, GBR: 100_000, MBR: 200_000, GBRBurst: 1, DelayBudget: time.Hour, Class: nonGBR, GBRClass: gbrClass},
		3: {Marks: []uint32{0x30}, MBR: 80_000, DelayBudget: 20 * time.Millisecond, Class: nonGBR},
	} {
		if err := p.AddFlow(id, s); err != nil {
			t.Fatal(err)
		}
	}
	attach(t, nsA, a, netlink.HANDLE_MIN_EGRESS, p.Program())
	obs := observer(t)
	attach(t, nsB, b, netlink.HANDLE_MIN_INGRESS, obs.prog)

	recv := map[int]*net.UDPConn{}
	for port := 7001; port <= 7003; port++ {
		recv[port] = udpIn(t, nsB, "10.97.0.2:"+strconv.Itoa(port), 0)
	}
	sent := map[uint32]int{0x10: 20, 0x20: 10, 0x30: 5}
	for mark, n := range sent {
		c := udpIn(t, nsA, "10.97.0.1:0", int(mark))
		to := &net.UDPAddr{IP: net.IPv4(10, 97, 0, 2), Port: 7000 + int(mark>>4)}
		for range n {
			if _, err := c.WriteToUDP(make([]byte, 972), to); err != nil { // 1000-byte IP packets
				t.Fatal(err)
			}
		}
	}
	got := map[int]int{}
	for port, c := range recv {
		got[port] = drain(c)
	}

	f1, f2, f3 := flowState(t, p, 1), flowState(t, p, 2), flowState(t, p, 3)
	if f1.Packets != 20 || got[7001] != 20 || f2.Packets != 10 || got[7002] != 10 {
		t.Errorf("flows 1, 2 passed %d, %d and the peer got %d, %d; want 20, 10 each", f1.Packets, f2.Packets, got[7001], got[7002])
	}
	if f3.Packets+f3.Drops != 5 || f3.Drops < 3 || uint64(got[7003]) != f3.Packets {
		t.Errorf("flow 3 (80 kbit/s, 20 ms budget): %d passed, %d dropped, peer got %d; want 5 in all, >= 3 dropped, the passed ones received", f3.Packets, f3.Drops, got[7003])
	}
	if f2.GBRPackets == 0 || f2.GBRPackets == f2.Packets {
		t.Errorf("flow 2: %d of %d packets guaranteed; want some in each class", f2.GBRPackets, f2.Packets)
	}
	st, err := p.Stats()
	if err != nil {
		t.Fatal(err)
	}
	cls := classPackets(t, nsA, a)
	want := map[uint16]uint64{0x10: f2.GBRPackets, 0x11: f1.Packets + f2.Packets - f2.GBRPackets + f3.Packets, 2: st.UnknownPackets}
	for m, n := range want {
		if cls[m] != n {
			t.Errorf("class 6771:%x sent %d packets, the program put %d there (all classes %v)", m, cls[m], n, cls)
		}
	}
	if st.UnknownPackets == 0 {
		t.Errorf("no unmarked packet (ARP) reached the default class")
	}

	// Every paced packet that reached the peer carried a mono delivery
	// time; the last one (of the last flow to send) the value the program
	// set: its flow's clock less its own time.
	var v observed
	if err := obs.m.Lookup(uint32(0), &v); err != nil {
		t.Fatal(err)
	}
	passed := f1.Packets + f2.Packets + f3.Packets
	if v.Mono != passed {
		t.Errorf("peer saw %d packets with a CLOCK_MONOTONIC delivery time, %d were paced", v.Mono, passed)
	}
	if v.Last == 0 || v.Last != f1.MBRClock-txNs(1000, 1_000_000) && v.Last != f2.MBRClock-txNs(1000, 200_000) && v.Last != f3.MBRClock-txNs(1000, 80_000) {
		t.Errorf("last tstamp at the peer %d is no flow's last departure (%d, %d, %d)", v.Last, f1.MBRClock, f2.MBRClock, f3.MBRClock)
	}
}

func flowState(t *testing.T, p *Pacer, id uint32) FlowState {
	t.Helper()
	st, err := p.Flow(id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// attach puts prog on dev's clsact hook (parent) in ns, direct action.
func attach(t *testing.T, ns *testenv.NetNS, dev string, parent uint32, prog *ebpf.Program) {
	t.Helper()
	h, err := netlink.NewHandleAt(ns.Handle, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	q := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}, QdiscType: "clsact"}
	if err := h.QdiscAdd(q); err != nil && !errors.Is(err, unix.EEXIST) {
		t.Fatalf("dev %s: add clsact: %v", dev, err)
	}
	f := &netlink.BpfFilter{
		FilterAttrs:  netlink.FilterAttrs{LinkIndex: link.Attrs().Index, Parent: parent, Handle: 1, Priority: 1, Protocol: unix.ETH_P_ALL},
		Fd:           prog.FD(),
		Name:         "edt-test",
		DirectAction: true,
	}
	if err := h.FilterAdd(f); err != nil {
		t.Fatalf("dev %s: attach: %v", dev, err)
	}
}

// observed is the observer's map value.
type observed struct {
	Mono uint64 // packets whose tstamp_type was BPF_SKB_TSTAMP_DELIVERY_MONO
	Last uint64 // the last such packet's tstamp
}

type obsProg struct {
	m    *ebpf.Map
	prog *ebpf.Program
}

// observer builds a tc program that records, at the peer's ingress, the
// packets that arrive with a mono delivery time and the last such tstamp.
// It reads __sk_buff->tstamp_type, so the kernel hands it tstamp as it is.
func observer(t *testing.T) obsProg {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R2, asm.R6, 180, asm.Byte),  // tstamp_type
		asm.JNE.Imm(asm.R2, 1, "out"),               // BPF_SKB_TSTAMP_DELIVERY_MONO
		asm.LoadMem(asm.R3, asm.R6, 152, asm.DWord), // tstamp
		asm.StoreMem(asm.R0, 8, asm.R3, asm.DWord),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), // TC_ACT_OK
		asm.Return(),
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "GPL", Instructions: insns})
	if err != nil {
		t.Fatalf("observer program: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	return obsProg{m, prog}
}

// udpIn opens a UDP socket bound to laddr in ns with SO_MARK mark (0:
// none); the socket stays in ns.
func udpIn(t *testing.T, ns *testenv.NetNS, laddr string, mark int) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	ns.Do(t, func() {
		a, err := net.ResolveUDPAddr("udp4", laddr)
		if err != nil {
			t.Fatal(err)
		}
		if c, err = net.ListenUDP("udp4", a); err != nil {
			t.Fatalf("netns %s: listen %s: %v", ns.Name, laddr, err)
		}
	})
	t.Cleanup(func() { c.Close() })
	if mark != 0 {
		rc, _ := c.SyscallConn()
		var serr error
		_ = rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, mark) })
		if serr != nil {
			t.Fatal(serr)
		}
	}
	return c
}

// drain counts the datagrams c receives until none comes for 300 ms.
func drain(c *net.UDPConn) int {
	buf := make([]byte, 2048)
	n := 0
	for {
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, _, err := c.ReadFromUDP(buf); err != nil {
			return n
		}
		n++
	}
}

// classPackets returns the packets each class under 6771: sent, by minor.
func classPackets(t *testing.T, ns *testenv.NetNS, dev string) map[uint16]uint64 {
	t.Helper()
	h, err := netlink.NewHandleAt(ns.Handle, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	cls, err := h.ClassList(link, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint16]uint64{}
	for _, c := range cls {
		if a := c.Attrs(); a.Handle>>16 == vethMajor && a.Statistics != nil && a.Statistics.Basic != nil {
			out[uint16(a.Handle)] = uint64(a.Statistics.Basic.Packets)
		}
	}
	return out
}
