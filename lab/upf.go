package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// FlowCounters are the UPF stand-in's per-flow counters.
type FlowCounters struct {
	// Packets and Bytes count G-PDUs handed to the N3 socket; Bytes is the
	// outer IP length (inner + 16 GTP-U + 8 UDP + 20 IP).
	Packets, Bytes uint64
	// Dropped counts packets the N3 socket refused (send buffer full).
	Dropped uint64
}

type flowCounters struct{ packets, bytes, dropped atomic.Uint64 }

// upf is the user-space UPF stand-in.
type upf struct {
	tun       *os.File
	table     *pdrTable
	conns     []*net.UDPConn // one per distinct mark
	connOf    []*net.UDPConn // per PDR
	gnb       unix.SockaddrInet4
	counters  []flowCounters
	unmatched atomic.Uint64
	done      chan struct{}
}

// newUPF opens the N3 sockets (one per distinct mark; all marks 0 when
// marks is false, as stock gtp5g would send) in the upf namespace.
func newUPF(ns *namespace, tun *os.File, pdrs []PDR, marks bool) (*upf, error) {
	u := &upf{tun: tun, table: newPDRTable(pdrs), connOf: make([]*net.UDPConn, len(pdrs)),
		counters: make([]flowCounters, len(pdrs)), done: make(chan struct{})}
	u.gnb.Port = GTPUPort
	u.gnb.Addr = GNBN3Addr.As4()
	byMark := map[uint32]*net.UDPConn{}
	for i, p := range pdrs {
		m := p.Mark
		if !marks {
			m = 0
		}
		c, ok := byMark[m]
		if !ok {
			var err error
			// A large send buffer: packets the qdisc holds are charged to
			// the socket, and the UPF must drop at the qdisc (as the kernel
			// datapath does), not block in sendto.
			c, err = listenUDP(ns, fmt.Sprintf("%s:%d", UPFN3Addr, GTPUPort),
				sockOpts{reusePort: true, mark: m, sndBuf: 64 << 20})
			if err != nil {
				u.close()
				return nil, fmt.Errorf("upf n3 socket for mark %d: %w", m, err)
			}
			byMark[m] = c
			u.conns = append(u.conns, c)
		}
		u.connOf[i] = c
	}
	return u, nil
}

// run reads DN->UE packets from the N6 TUN, encapsulates and sends them
// until the TUN is closed.
func (u *upf) run() error {
	boostThread()
	defer close(u.done)
	buf := make([]byte, GTPUHeaderLen+65536)
	raws := make([]interface {
		Write(func(uintptr) bool) error
	}, len(u.connOf))
	for i, c := range u.connOf {
		rc, err := c.SyscallConn()
		if err != nil {
			return fmt.Errorf("upf n3 socket: %w", err)
		}
		raws[i] = rc
	}
	for {
		n, err := u.tun.Read(buf[GTPUHeaderLen:])
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return nil
			}
			return fmt.Errorf("upf: read %s: %w", upfTunDev, err)
		}
		inner := buf[GTPUHeaderLen : GTPUHeaderLen+n]
		i := u.table.match(inner)
		if i < 0 {
			u.unmatched.Add(1)
			continue
		}
		p := &u.table.pdrs[i]
		PutGTPUHeader(buf, p.TEID, p.QFI, n)
		pkt := buf[:GTPUHeaderLen+n]
		var serr error
		_ = raws[i].Write(func(fd uintptr) bool {
			serr = unix.Sendto(int(fd), pkt, unix.MSG_DONTWAIT, &u.gnb)
			return true // never wait: a full socket is a drop
		})
		c := &u.counters[i]
		if serr != nil {
			c.dropped.Add(1)
			continue
		}
		c.packets.Add(1)
		c.bytes.Add(uint64(len(pkt) + 28))
	}
}

// snapshot returns the per-PDR counters.
func (u *upf) snapshot() []FlowCounters {
	out := make([]FlowCounters, len(u.counters))
	for i := range u.counters {
		c := &u.counters[i]
		out[i] = FlowCounters{Packets: c.packets.Load(), Bytes: c.bytes.Load(), Dropped: c.dropped.Load()}
	}
	return out
}

func (u *upf) close() {
	for _, c := range u.conns {
		c.Close()
	}
}
