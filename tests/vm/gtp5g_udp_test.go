package vm

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
)

// UDP endpoints of the real-gtp5g scenarios, opened inside the lab's
// namespaces (gtp5gtest.NS), counting what arrives.

// udpCounter counts datagrams arriving on one UDP socket; with seqs set,
// it also records each datagram's sequence number (its first 8 bytes,
// big-endian, as paceSeq writes them).
type udpCounter struct {
	conn *net.UDPConn
	n    atomic.Int64
	seqs atomic.Pointer[seqSet]
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
		buf := make([]byte, 2048)
		for {
			n, _, err := c.conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if ss := c.seqs.Load(); ss != nil && n >= 8 {
				ss.add(binary.BigEndian.Uint64(buf))
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
