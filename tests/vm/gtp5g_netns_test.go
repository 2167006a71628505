package vm

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/internal/testenv"
)

// This file holds the guest-side plumbing of the real-gtp5g scenarios:
// running Go code inside a network namespace, creating gtp5g devices the
// way free5GC's UPF does (a UDP socket on :2152 handed to RTM_NEWLINK) and
// counting UDP datagrams.

// gtp5g device roles (IFLA_GTP5G_ROLE).
const (
	gtp5gRoleUPF = 0
	gtp5gRoleRAN = 1
)

// gtp5g link attributes inside IFLA_INFO_DATA (go-gtp5gnl's IFLA_FD1, ...).
const (
	iflaGtp5gFD1      = 1
	iflaGtp5gHashSize = 2
	iflaGtp5gRole     = 3
)

// nsRef is a network namespace the scenario uses: the guest's root
// namespace (ns == nil) or one made with testenv.NewNetNS.
type nsRef struct {
	name string
	ns   *testenv.NetNS
}

// do runs f on a thread inside the namespace. Sockets opened by f stay in
// that namespace when used from other goroutines later.
func (r nsRef) do(f func() error) error {
	if r.ns == nil {
		return f()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("netns %s: get current: %w", r.name, err)
			return
		}
		defer orig.Close()
		if err := netns.Set(r.ns.Handle); err != nil {
			errc <- fmt.Errorf("netns %s: enter: %w", r.name, err)
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			// leave the thread locked: it dies with this goroutine
			errc <- fmt.Errorf("netns %s: leave: %w", r.name, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// ip runs the ip command in the namespace and fails the test on error.
func (r nsRef) ip(t *testing.T, args ...string) {
	t.Helper()
	if r.ns != nil {
		r.ns.Run(t, "ip", args...)
		return
	}
	testenv.RequireCmd(t, "ip")
	if out, err := runCmd("ip", args...); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// ifindex returns the index of the named link in the namespace.
func (r nsRef) ifindex(t *testing.T, name string) int {
	t.Helper()
	var idx int
	err := r.do(func() error {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return err
		}
		idx = ifi.Index
		return nil
	})
	if err != nil {
		t.Fatalf("netns %s: link %s: %v", r.name, name, err)
	}
	return idx
}

// addGtp5gLink creates and brings up a gtp5g device in the namespace,
// backed by a UDP socket on :2152 that stays open until the test ends (as
// go-upf and gogtp5g-link keep theirs).
func (r nsRef) addGtp5gLink(t *testing.T, name string, role uint32) {
	t.Helper()
	var conn *net.UDPConn
	var file *os.File
	err := r.do(func() error {
		var err error
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: 2152})
		if err != nil {
			return fmt.Errorf("listen udp :2152: %w", err)
		}
		file, err = conn.File()
		if err != nil {
			return fmt.Errorf("udp socket fd: %w", err)
		}
		return createGtp5gLink(name, int(file.Fd()), role)
	})
	if conn != nil {
		t.Cleanup(func() { _ = conn.Close() })
	}
	if file != nil {
		t.Cleanup(func() { _ = file.Close() })
	}
	if err != nil {
		t.Fatalf("netns %s: create gtp5g device %s: %v", r.name, name, err)
	}
	t.Cleanup(func() { _, _ = r.tryIP("link", "del", name) })
	r.ip(t, "link", "set", name, "up")
}

// tryIP runs the ip command in the namespace, returning its error.
func (r nsRef) tryIP(args ...string) (string, error) {
	if r.ns != nil {
		return r.ns.Try("ip", args...)
	}
	return runCmd("ip", args...)
}

// createGtp5gLink sends RTM_NEWLINK for a gtp5g device in the calling
// thread's namespace.
func createGtp5gLink(name string, fd int, role uint32) error {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return fmt.Errorf("dial rtnetlink: %w", err)
	}
	defer c.Close()
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.IFLA_IFNAME, name)
	ae.Nested(unix.IFLA_LINKINFO, func(li *netlink.AttributeEncoder) error {
		li.String(unix.IFLA_INFO_KIND, "gtp5g")
		li.Nested(unix.IFLA_INFO_DATA, func(d *netlink.AttributeEncoder) error {
			d.Uint32(iflaGtp5gFD1, uint32(fd))
			d.Uint32(iflaGtp5gHashSize, 1024)
			d.Uint32(iflaGtp5gRole, role)
			return nil
		})
		return nil
	})
	attrs, err := ae.Encode()
	if err != nil {
		return fmt.Errorf("encode link attributes: %w", err)
	}
	ifinfo := make([]byte, unix.SizeofIfInfomsg) // AF_UNSPEC, no index
	_, err = c.Execute(netlink.Message{
		Header: netlink.Header{
			Type:  unix.RTM_NEWLINK,
			Flags: netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl,
		},
		Data: append(ifinfo, attrs...),
	})
	if err != nil {
		return fmt.Errorf("RTM_NEWLINK %s (kind gtp5g): %w", name, err)
	}
	return nil
}

// udpCounter counts datagrams arriving on one UDP socket.
type udpCounter struct {
	conn *net.UDPConn
	n    atomic.Int64
}

// listenUDP opens a counting UDP receiver on addr inside the namespace.
func (r nsRef) listenUDP(t *testing.T, addr string) *udpCounter {
	t.Helper()
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		t.Fatalf("receiver %s: %v", addr, err)
	}
	c := &udpCounter{}
	if err := r.do(func() error {
		c.conn, err = net.ListenUDP("udp4", ua)
		return err
	}); err != nil {
		t.Fatalf("netns %s: listen %s: %v", r.name, addr, err)
	}
	t.Cleanup(func() { _ = c.conn.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := c.conn.ReadFromUDP(buf); err != nil {
				return
			}
			c.n.Add(1)
		}
	}()
	return c
}

// udpSender sends fixed-size datagrams from one source address.
type udpSender struct {
	conn *net.UDPConn
	name string
}

// dialUDP opens a UDP sender from src to dst inside the namespace.
func (r nsRef) dialUDP(t *testing.T, src, dst string) *udpSender {
	t.Helper()
	la, err := net.ResolveUDPAddr("udp4", src)
	if err != nil {
		t.Fatalf("sender %s: %v", src, err)
	}
	ra, err := net.ResolveUDPAddr("udp4", dst)
	if err != nil {
		t.Fatalf("sender %s: %v", dst, err)
	}
	s := &udpSender{name: src + "->" + dst}
	if err := r.do(func() error {
		s.conn, err = net.DialUDP("udp4", la, ra)
		return err
	}); err != nil {
		t.Fatalf("netns %s: dial %s: %v", r.name, s.name, err)
	}
	t.Cleanup(func() { _ = s.conn.Close() })
	return s
}

// send writes n datagrams of size bytes, gap apart (TCG is slow: keep the
// rate low so nothing is dropped for lack of CPU).
func (s *udpSender) send(t *testing.T, n, size int, gap time.Duration) {
	t.Helper()
	b := make([]byte, size)
	for i := 0; i < n; i++ {
		if _, err := s.conn.Write(b); err != nil {
			t.Fatalf("send %s: %v", s.name, err)
		}
		time.Sleep(gap)
	}
}

// waitCounts waits until every counter reached its wanted value or the
// timeout passed, and returns the counts.
func waitCounts(want map[*udpCounter]int64, timeout time.Duration) map[*udpCounter]int64 {
	deadline := time.Now().Add(timeout)
	for {
		got := make(map[*udpCounter]int64, len(want))
		done := true
		for c, w := range want {
			got[c] = c.n.Load()
			if got[c] < w {
				done = false
			}
		}
		if done || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}
