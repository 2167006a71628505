package vm

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
)

// UDP endpoints of the real-gtp5g scenarios, opened inside the lab's
// namespaces (gtp5gtest.NS), counting what arrives.

// udpCounter counts datagrams arriving on one UDP socket; with seqs set,
// it also records each datagram's sequence number (its first 8 bytes,
// big-endian, as paceSeq writes them); with arrivals set, each one's
// kernel arrival time (recordArrivals).
type udpCounter struct {
	conn     *net.UDPConn
	n        atomic.Int64
	seqs     atomic.Pointer[seqSet]
	arrivals atomic.Pointer[arrivalLog]
}

// arrivalLog is the kernel arrival times (SO_TIMESTAMPNS, CLOCK_REALTIME)
// of the datagrams a udpCounter read, and how many came without one.
type arrivalLog struct {
	mu        sync.Mutex
	at        []time.Time
	unstamped int
}

// recordArrivals has the kernel stamp each datagram's arrival and c keep
// the stamps from now on: a window counted on them does not depend on
// when the reading goroutine ran, which a loaded TCG guest delays by tens
// of milliseconds, a percent of a 10 s window at the receivers' edges.
func (c *udpCounter) recordArrivals(t *testing.T) *arrivalLog {
	t.Helper()
	raw, err := c.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if cerr := raw.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); cerr != nil || err != nil {
		t.Fatalf("SO_TIMESTAMPNS: %v %v", cerr, err)
	}
	l := &arrivalLog{}
	c.arrivals.Store(l)
	return l
}

// add records one datagram's control messages: its arrival time, if the
// kernel stamped it.
func (l *arrivalLog) add(oob []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	msgs, err := unix.ParseSocketControlMessage(oob)
	for _, m := range msgs {
		if err == nil && m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec, nsec := binary.NativeEndian.Uint64(m.Data), binary.NativeEndian.Uint64(m.Data[8:])
			l.at = append(l.at, time.Unix(int64(sec), int64(nsec)))
			return
		}
	}
	l.unstamped++
}

// count is the datagrams that arrived in [from, to) and those that came
// without an arrival time.
func (l *arrivalLog) count(from, to time.Time) (n, unstamped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range l.at {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n, l.unstamped
}

// listenUDP opens a counting UDP receiver on addr inside the namespace.
func listenUDP(t *testing.T, r gtp5gtest.NS, addr string) *udpCounter {
	t.Helper()
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		t.Fatalf("receiver %s: %v", addr, err)
	}
	c := &udpCounter{}
	if err := r.Do(func() error {
		c.conn, err = net.ListenUDP("udp4", ua)
		return err
	}); err != nil {
		t.Fatalf("netns %s: listen %s: %v", r.Name, addr, err)
	}
	t.Cleanup(func() { _ = c.conn.Close() })
	go func() {
		buf, oob := make([]byte, 2048), make([]byte, 128)
		for {
			n, oobn, _, _, err := c.conn.ReadMsgUDP(buf, oob)
			if err != nil {
				return
			}
			if ss := c.seqs.Load(); ss != nil && n >= 8 {
				ss.add(binary.BigEndian.Uint64(buf))
			}
			if l := c.arrivals.Load(); l != nil {
				l.add(oob[:oobn])
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
func dialUDP(t *testing.T, r gtp5gtest.NS, src, dst string) *udpSender {
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
	if err := r.Do(func() error {
		s.conn, err = net.DialUDP("udp4", la, ra)
		return err
	}); err != nil {
		t.Fatalf("netns %s: dial %s: %v", r.Name, s.name, err)
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
