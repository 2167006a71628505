package vm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// Device teardown against rule requests, traffic and module removal:
// stress loops whose only verdict on a broken module is the kernel error
// they provoke, which fails the VM test. Each also checks that the
// module still takes a device and rules afterwards.

// guestKOEnv names the guest path of the module under test, for the
// test that removes and reloads it.
const guestKOEnv = "GTPQOS_GTP5G_GUEST_KO"

const teardownRules = 16

// teardownRuleSet installs QER, FAR and PDR 1..teardownRules of session 1.
func teardownRuleSet(t *testing.T, r *gtp5gtest.Rules) {
	t.Helper()
	for i := 1; i <= teardownRules; i++ {
		r.AddQER(t, 1, i, flowA)
		r.AddFAR(t, 1, i, gtp5gtest.FARForward(200, "127.0.0.1"))
		r.AddPDR(t, 1, i, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1",
			FARID: uint32(i), QERIDs: []uint32{uint32(i)}})
	}
}

// deleteRules removes the rule set until a request fails (the device is
// gone) and returns how many requests succeeded.
func deleteRules(r *gtp5gtest.Rules) int {
	n := 0
	for i := 1; i <= teardownRules; i++ {
		oid := gtp5gtest.OID(1, i)
		for _, rm := range []func(*gtp5gnl.Client, *gtp5gnl.Link, gtp5gnl.OID) error{
			gtp5gnl.RemovePDROID, gtp5gnl.RemoveQEROID, gtp5gnl.RemoveFAROID} {
			if rm(r.Client(), r.Link, oid) != nil {
				return n
			}
			n++
		}
	}
	return n
}

// checkModuleWorks creates a device with one rule set and reads a rule
// back: the module survived.
func checkModuleWorks(t *testing.T, name string) {
	t.Helper()
	_, r := seriesDevice(t, name)
	teardownRuleSet(t, r)
	if _, err := gtp5gnl.GetPDROID(r.Client(), r.Link, gtp5gtest.OID(1, teardownRules)); err != nil {
		t.Fatalf("%s: get PDR after the stress loop: %v", name, err)
	}
}

// TestGtp5gSeriesTeardownDeletesVsDellink: rule deletes race the deletion
// of their device: dellink frees the rules under rtnl, so a delete must
// hold rtnl too (else use-after-free, double call_rcu, double ida_free).
func TestGtp5gSeriesTeardownDeletesVsDellink(t *testing.T) {
	requireSeriesFixes(t)
	const rounds = 40
	deleted := 0
	for i := 0; i < rounds; i++ {
		ns, r := seriesDevice(t, "gtpd1")
		teardownRuleSet(t, r)
		c := dialRoute(t, ns)
		done := make(chan int)
		go func() { done <- deleteRules(r) }()
		time.Sleep(time.Duration(i%10) * time.Millisecond)
		if err := deleteLink(c, r.Link.Index); err != nil {
			t.Fatalf("round %d: delete gtpd1: %v", i, err)
		}
		deleted += <-done
	}
	t.Logf("%d rounds of rule deletes against RTM_DELLINK: %d of %d deletes ran before the device went",
		rounds, deleted, rounds*3*teardownRules)
	checkModuleWorks(t, "gtpd2")
}

// dialRoute opens an rtnetlink socket in ns, closed when the test ends.
func dialRoute(t *testing.T, ns gtp5gtest.NS) *netlink.Conn {
	t.Helper()
	var c *netlink.Conn
	if err := ns.Do(func() (err error) { c, err = netlink.Dial(unix.NETLINK_ROUTE, nil); return err }); err != nil {
		t.Fatalf("netns %s: rtnetlink: %v", ns.Name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// deleteLink sends RTM_DELLINK for ifindex (no fork of ip(8), so the
// delete lands while rule requests are still in flight).
func deleteLink(c *netlink.Conn, ifindex int) error {
	ifinfo := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(ifinfo[4:], uint32(ifindex))
	_, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_DELLINK, Flags: netlink.Request | netlink.Acknowledge},
		Data:   ifinfo,
	})
	return err
}

// gtpuPacket is a GTP-U G-PDU for teid carrying an IPv4/UDP datagram
// from src to dst.
func gtpuPacket(teid uint32, src, dst net.IP, payload int) []byte {
	inner := make([]byte, 28+payload)
	inner[0], inner[8], inner[9] = 0x45, 64, unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(inner[2:], uint16(len(inner)))
	copy(inner[12:], src.To4())
	copy(inner[16:], dst.To4())
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(inner[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(inner[10:], ^uint16(sum))
	binary.BigEndian.PutUint16(inner[20:], 40000)
	binary.BigEndian.PutUint16(inner[22:], 9)
	binary.BigEndian.PutUint16(inner[24:], uint16(8+payload))
	hdr := []byte{0x30, 0xff, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(hdr[2:], uint16(len(inner)))
	binary.BigEndian.PutUint32(hdr[4:], teid)
	return append(hdr, inner...)
}

// deviceBytes returns the rx and tx bytes of dev in the calling thread's
// namespace (/proc/thread-self/net/dev).
func deviceBytes(dev string) (rx, tx uint64, err error) {
	b, err := os.ReadFile("/proc/thread-self/net/dev")
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(name) != dev {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 9 {
			break
		}
		rx, _ = strconv.ParseUint(f[0], 10, 64)
		tx, _ = strconv.ParseUint(f[8], 10, 64)
		return rx, tx, nil
	}
	return 0, 0, fmt.Errorf("no %s in /proc/net/dev", dev)
}

// TestGtp5gSeriesTeardownTrafficDuringDellink: downlink datagrams through
// the device and GTP-U packets to its socket keep flowing while the device
// is deleted. Until its socket lets go of it and it is closed, the device
// must keep its rules and tables: stock gtp5g freed them first, so a
// packet in that window walked freed tables. Without KASAN a walk of
// freed memory rarely faults, but its symptom is in the log: a GTP-U
// packet for the installed TEID that finds no PDR, or a PDR without its
// FAR. Those lines fail the test, as does a delete that hangs (a
// reference the teardown waits for).
func TestGtp5gSeriesTeardownTrafficDuringDellink(t *testing.T) {
	requireSeriesFixes(t)
	const (
		rounds  = 12
		senders = 2 // of each kind, one per guest CPU
		// a hang, not a slow host: the core logs every 10 s while it
		// waits for a reference, a hung task shows after 120 s
		maxDel = 30 * time.Second
	)
	kmsg, err := openKmsgTail()
	if err != nil {
		t.Fatal(err)
	}
	defer kmsg.close()
	var sent atomic.Int64
	var slowest, total time.Duration
	for i := 0; i < rounds; i++ {
		ns, link := trafficDevice(t)
		c := dialRoute(t, ns)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for j := 0; j < senders; j++ {
			startSender(t, ns, &wg, stop, &sent, "10.60.0.1:9", make([]byte, 200))
			startSender(t, ns, &wg, stop, &sent, "127.0.0.1:2152",
				gtpuPacket(100, net.IPv4(10, 60, 0, 1), net.IPv4(10, 200, 0, 2), 200))
		}
		time.Sleep(time.Duration(20+i%4*10) * time.Millisecond)
		var rx, tx uint64
		if err := ns.Do(func() (err error) { rx, tx, err = deviceBytes("gtpt1"); return err }); err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: %v", i, err)
		}
		if rx == 0 || tx == 0 {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: gtpt1 received %d and sent %d bytes before the delete: the traffic does not reach it", i, rx, tx)
		}
		began := time.Now()
		err := deleteLink(c, link)
		took := time.Since(began)
		time.Sleep(10 * time.Millisecond)
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("round %d: RTM_DELLINK gtpt1: %v", i, err)
		}
		total += took
		slowest = max(slowest, took)
		if took > maxDel {
			t.Fatalf("round %d: RTM_DELLINK gtpt1 took %v (limit %v)", i, took, maxDel)
		}
	}
	lines, err := kmsg.lines()
	if err != nil {
		t.Fatal(err)
	}
	if bad := matching(lines, "No PDR match this skb : teid[64]", "FAR not exists", "PDR is NULL",
		"unregister_netdevice: waiting for"); len(bad) > 0 {
		t.Errorf("%d kernel lines show gtpt1 handling traffic after its rules were gone, e.g. %q", len(bad), bad[0])
	}
	if bugs := bugLines(lines); len(bugs) > 0 {
		t.Errorf("the kernel reported %d bugs while gtpt1 carried traffic, e.g. %q", len(bugs), bugs[0])
	}
	t.Logf("%d rounds of RTM_DELLINK (ip link del) under %d downlink and %d GTP-U senders: %d datagrams sent; "+
		"the delete took %v on average, %v at most; %d kernel lines read",
		rounds, senders, senders, sent.Load(), total/rounds, slowest, len(lines))
	checkModuleWorks(t, "gtpt2")
}

// trafficDevice creates gtpt1 in a namespace of its own with an uplink PDR
// for TEID 100 and a downlink PDR for UE 10.60.0.1 routed through it, and
// returns the namespace and the device's ifindex.
func trafficDevice(t *testing.T) (gtp5gtest.NS, int) {
	t.Helper()
	ns := gtp5gtest.In("gtpt1", testenv.NewNetNS(t))
	ns.AddLink(t, "gtpt1", gtp5gtest.RoleUPF)
	r := ns.DialRules(t, "gtpt1")
	ns.IP(t, "route", "add", "10.60.0.0/24", "dev", "gtpt1")
	r.AddFAR(t, 1, 1, gtp5gtest.FARForward(0, ""))
	r.AddFAR(t, 1, 2, gtp5gtest.FARForward(100, "127.0.0.1"))
	r.AddQER(t, 1, 1, flowA)
	r.AddPDR(t, 1, 1, gtp5gtest.PDR{Precedence: 10, SrcIntf: gtp5gtest.SrcAccess, FTEID: 100,
		FTEIDAddr: "127.0.0.1", OHR: true, FARID: 1, QERIDs: []uint32{1}})
	r.AddPDR(t, 1, 2, gtp5gtest.PDR{Precedence: 10, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1",
		FARID: 2, QERIDs: []uint32{1}})
	return ns, r.Link.Index
}

// startSender writes pkt to dst from a socket in ns until stop closes.
func startSender(t *testing.T, ns gtp5gtest.NS, wg *sync.WaitGroup, stop <-chan struct{},
	sent *atomic.Int64, dst string, pkt []byte) {
	t.Helper()
	var conn *net.UDPConn
	if err := ns.Do(func() (err error) {
		a, err := net.ResolveUDPAddr("udp4", dst)
		if err == nil {
			conn, err = net.DialUDP("udp4", nil, a)
		}
		return err
	}); err != nil {
		t.Fatalf("socket toward %s: %v", dst, err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer conn.Close()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := conn.Write(pkt); err == nil {
				sent.Add(1)
			}
		}
	}()
}

// TestGtp5gSeriesTeardownRmmod: the module is removed while devices have
// rules and requests on them are in flight, then loaded again: no
// request may run while the devices go.
func TestGtp5gSeriesTeardownRmmod(t *testing.T) {
	requireSeriesFixes(t)
	ko := os.Getenv(guestKOEnv)
	if ko == "" {
		t.Skipf("%s is not set: the launcher names the module's guest path", guestKOEnv)
	}
	const rounds = 4
	requests := 0
	var slowest time.Duration
	for i := 0; i < rounds; i++ {
		var rules []*gtp5gtest.Rules
		for d := 0; d < 2; d++ {
			_, r := seriesDevice(t, fmt.Sprintf("gtpx%d", d))
			teardownRuleSet(t, r)
			rules = append(rules, r)
		}
		var wg sync.WaitGroup
		var n atomic.Int64
		for _, r := range rules {
			wg.Add(1)
			go func(r *gtp5gtest.Rules) {
				defer wg.Done()
				n.Add(int64(deleteRules(r)))
			}(r)
		}
		began := time.Now()
		if err := removeModule("gtp5g"); err != nil {
			wg.Wait()
			t.Fatalf("round %d: remove gtp5g: %v", i, err)
		}
		slowest = max(slowest, time.Since(began))
		wg.Wait()
		requests += int(n.Load())
		if err := loadModule(ko); err != nil {
			t.Fatalf("round %d: load %s again: %v", i, ko, err)
		}
	}
	t.Logf("%d rounds of rmmod with 2 devices of %d rules and deletes in flight: %d deletes ran first; "+
		"rmmod took %v at most", rounds, 3*teardownRules, requests, slowest)
	checkModuleWorks(t, "gtpx9")
}

// removeModule unloads name, retrying while it is busy.
func removeModule(name string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := unix.DeleteModule(name, unix.O_NONBLOCK)
		if err == nil || !(errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EAGAIN)) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loadModule loads the module file at path without parameters.
func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.FinitModule(int(f.Fd()), "", 0)
}
