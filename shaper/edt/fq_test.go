package edt

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// Pacing on the wire, where the kernel has sch_fq (the Debian VM; this
// host has none): a veth with the intended tree, HTB root -> link class ->
// shared classes each with an fq leaf. A burst of one flow paced at 2
// Mbit/s reaches the peer spread over its departure times (1000-byte
// packets, 4 ms apart); a burst of a flow at 1 Gbit/s in the same class
// arrives at once.
func TestFqPacesOnVeth(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	p := loadForTest(t, LoadOptions{Sessions: 16, Flows: 16, Marks: 16, Overhead: 14})
	nsA, nsB := testenv.NewNetNS(t), testenv.NewNetNS(t)
	a, b := testenv.UniqueName("edtf"), testenv.UniqueName("edtg")
	nsA.Run(t, "ip", "link", "add", a, "type", "veth", "peer", "name", b, "netns", nsB.Name)
	for _, c := range []struct {
		ns   *testenv.NetNS
		dev  string
		addr string
	}{{nsA, a, "10.96.0.1/24"}, {nsB, b, "10.96.0.2/24"}} {
		c.ns.Run(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
		c.ns.Run(t, "ip", "addr", "add", c.addr, "dev", c.dev)
		c.ns.Run(t, "ip", "link", "set", c.dev, "up")
	}
	nsA.Run(t, "tc", "qdisc", "add", "dev", a, "root", "handle", "6771:", "htb", "default", "2")
	nsA.Run(t, "tc", "class", "add", "dev", a, "parent", "6771:", "classid", "6771:1", "htb", "rate", "1gbit")
	for _, m := range []string{"2", "10", "11"} {
		nsA.Run(t, "tc", "class", "add", "dev", a, "parent", "6771:1", "classid", "6771:"+m, "htb", "rate", "100mbit", "ceil", "1gbit")
		if out, err := nsA.Try("tc", "qdisc", "add", "dev", a, "parent", "6771:"+m, "fq"); err != nil {
			if strings.Contains(out, "qdisc kind is unknown") || strings.Contains(out, "Unknown qdisc") {
				t.Skipf("needs sch_fq (the Debian VM has it, this kernel has not): %s", strings.TrimSpace(out))
			}
			t.Fatalf("add fq leaf: %v: %s", err, out)
		}
	}
	const nonGBR = vethMajor<<16 | 0x11
	const paced, fast = 2_000_000, 1_000_000_000
	for id, rate := range map[uint32]uint64{1: paced, 2: fast} {
		if err := p.AddFlow(id, FlowSpec{Marks: []uint32{id << 4}, MBR: rate, DelayBudget: 5 * time.Second, Class: nonGBR}); err != nil {
			t.Fatal(err)
		}
	}
	attach(t, nsA, a, netlink.HANDLE_MIN_EGRESS, p.Program())

	const n = 60 // below fq's flow_limit (100 packets a flow)
	spread := map[uint32]time.Duration{}
	for _, id := range []uint32{1, 2} {
		port := 7100 + int(id)
		rx := udpIn(t, nsB, "10.96.0.2:"+strconv.Itoa(port), 0)
		tx := udpIn(t, nsA, "10.96.0.1:0", int(id<<4))
		kernelStamps(t, rx)
		arrivals := make(chan []time.Time, 1)
		go func() { arrivals <- readStamped(rx, n) }()
		to := &net.UDPAddr{IP: net.IPv4(10, 96, 0, 2), Port: port}
		for range n {
			if _, err := tx.WriteToUDP(make([]byte, 972), to); err != nil { // 1000-byte IP packets
				t.Fatal(err)
			}
		}
		ts := <-arrivals
		if len(ts) != n {
			t.Fatalf("flow %d: the peer got %d of %d packets", id, len(ts), n)
		}
		spread[id] = ts[n-1].Sub(ts[0])
	}
	want := time.Duration((n - 1) * txNs(1000, paced))
	t.Logf("arrival spread: paced flow %v (departures span %v), 1 Gbit/s flow %v", spread[1], want, spread[2])
	if spread[1] < want*9/10 || spread[1] > want*3/2 {
		t.Errorf("paced flow's packets arrived over %v, want about %v", spread[1], want)
	}
	if spread[2] > want/4 {
		t.Errorf("the 1 Gbit/s flow's packets arrived over %v: held back like the paced one (%v)", spread[2], want)
	}
}

// kernelStamps makes c's datagrams carry their kernel receive time
// (SO_TIMESTAMPNS), so a stall of the reading goroutine does not move
// their arrival.
func kernelStamps(t *testing.T, c *net.UDPConn) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) }); err != nil || serr != nil {
		t.Fatalf("SO_TIMESTAMPNS: %v %v", err, serr)
	}
}

// readStamped reads up to n datagrams from c (each within 3 s of the
// last) and returns their kernel receive times.
func readStamped(c *net.UDPConn, n int) []time.Time {
	var ts []time.Time
	buf, oob := make([]byte, 2048), make([]byte, 128)
	for len(ts) < n {
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, oobn, _, _, err := c.ReadMsgUDP(buf, oob)
		if err != nil {
			break
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			break
		}
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
				st := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
				ts = append(ts, time.Unix(st.Unix()))
			}
		}
	}
	return ts
}
