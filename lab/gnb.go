package lab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// gnb is the gNB stand-in: GTP-U in on N3, inner packets out through a TUN
// (the kernel then routes them to the ue namespace).
type gnb struct {
	conn      *net.UDPConn
	tun       *os.File
	teids     map[uint32]bool
	delivered atomic.Uint64
	bad       atomic.Uint64
	// stamp, while set, makes the gNB write its kernel receive time into
	// built-in UDP traffic (see stampInner).
	stamp atomic.Bool
	done  chan struct{}
}

func newGNB(ns *namespace, tun *os.File, pdrs []PDR) (*gnb, error) {
	c, err := listenUDP(ns, fmt.Sprintf("%s:%d", GNBN3Addr, GTPUPort), sockOpts{rcvBuf: 16 << 20, timestamps: true})
	if err != nil {
		return nil, fmt.Errorf("gnb n3 socket: %w", err)
	}
	g := &gnb{conn: c, tun: tun, teids: map[uint32]bool{}, done: make(chan struct{})}
	for _, p := range pdrs {
		g.teids[p.TEID] = true
	}
	return g, nil
}

// run decapsulates until the socket is closed.
func (g *gnb) run() error {
	boostThread()
	defer close(g.done)
	buf := make([]byte, 65536)
	oob := make([]byte, 128)
	for {
		n, oobn, _, _, err := g.conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("gnb: read n3: %w", err)
		}
		p, err := ParseGTPU(buf[:n])
		if err != nil || !g.teids[p.TEID] || len(p.Inner) == 0 {
			g.bad.Add(1)
			continue
		}
		if g.stamp.Load() {
			if at, ok := rxTimestamp(oob[:oobn]); ok {
				stampInner(p.Inner, at)
			}
		}
		if _, err := g.tun.Write(p.Inner); err != nil {
			if errors.Is(err, os.ErrClosed) {
				return nil
			}
			g.bad.Add(1)
			continue
		}
		g.delivered.Add(1)
	}
}

func (g *gnb) close() { g.conn.Close() }

// stampInner writes at (Unix nanoseconds) into bytes 8..15 of an inner
// IPv4/UDP packet's payload — the lab's built-in traffic keeps them zero for
// this — and clears the UDP checksum (0 = none in IPv4). Receivers then
// place the packet in the second it left N3, whatever the scheduling of
// the gNB and UE goroutines afterwards.
func stampInner(pkt []byte, at time.Time) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 || pkt[9] != 17 {
		return
	}
	ihl := int(pkt[0]&0x0f) * 4
	if len(pkt) < ihl+8+16 {
		return
	}
	binary.BigEndian.PutUint64(pkt[ihl+8+8:], uint64(at.UnixNano()))
	pkt[ihl+6], pkt[ihl+7] = 0, 0
}
