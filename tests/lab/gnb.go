package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
)

// gnb is the gNB stand-in: GTP-U in on N3, inner packets out through a TUN
// (the kernel then routes them to the ue namespace).
type gnb struct {
	conn      *net.UDPConn
	tun       *os.File
	teids     map[uint32]bool
	delivered atomic.Uint64
	bad       atomic.Uint64
	done      chan struct{}
}

func newGNB(ns *namespace, tun *os.File, pdrs []PDR) (*gnb, error) {
	c, err := listenUDP(ns, fmt.Sprintf("%s:%d", GNBN3Addr, GTPUPort), sockOpts{rcvBuf: 16 << 20})
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
	for {
		n, _, err := g.conn.ReadFromUDPAddrPort(buf)
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
