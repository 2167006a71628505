package lab

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// runTCP runs one TCP connection per flow: the UE listens, the DN endpoint
// connects from its address and port and sends (reverse mode, like
// iperf3 -R), as fast as TCP allows unless an offered rate is set.
func (l *Lab) runTCP(ctx context.Context, spec TrafficSpec) ([]FlowTraffic, error) {
	n := len(l.pdrs)
	nsec := seconds(spec.Duration)
	lns := make([]net.Listener, n)
	conns := make([]*net.TCPConn, n)
	defer func() {
		for i := range n {
			if lns[i] != nil {
				lns[i].Close()
			}
			if conns[i] != nil {
				// Reset, not FIN: a FIN leaves the DN's fixed address
				// and port in TIME_WAIT, and the next run's connect from
				// it fails with "address already in use" (the UE has
				// closed first by now: see the sender).
				_ = conns[i].SetLinger(0)
				conns[i].Close()
			}
		}
	}()
	if err := l.connectTCP(ctx, lns, conns); err != nil {
		return nil, err
	}
	out := make([]FlowTraffic, n)
	start := spec.Start
	end := start.Add(spec.Duration)
	rctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		out[i].Name = l.pdrs[i].Name
		out[i].Intervals = newIntervals(nsec)
		srv, err := lns[i].Accept()
		if err != nil {
			return nil, fmt.Errorf("flow %s: tcp accept: %w", l.pdrs[i].Name, err)
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer srv.Close()
			receiveTCP(srv, out[i].Intervals, start, end.Add(300*time.Millisecond))
		}()
		go func() {
			defer wg.Done()
			sendTCP(rctx, conns[i], l.offered(i, spec), start)
			out[i].Retransmits = tcpRetrans(conns[i])
			// No FIN from the DN: the UE closes first when its read
			// deadline passes, so the DN's side never becomes the active
			// closer, whose TIME_WAIT would hold its fixed address and
			// port against the next run's connect.
		}()
	}
	wg.Wait()
	for i := range n {
		finishIntervals(out[i].Intervals)
		for s := range out[i].Intervals {
			out[i].Intervals[s].Lost = -1
		}
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	return out, nil
}

// connectTCP listens on every flow's UE address and connects to it from
// the flow's DN address.
func (l *Lab) connectTCP(ctx context.Context, lns []net.Listener, conns []*net.TCPConn) error {
	for i, p := range l.pdrs {
		addr := netip.AddrPortFrom(p.UE, p.UEPort).String()
		err := inNS(l.topo.ue.handle, func() (err error) {
			lns[i], err = net.Listen("tcp4", addr)
			return err
		})
		if err != nil {
			return fmt.Errorf("flow %s: tcp listen on %s in netns %s: %w", p.Name, addr, l.topo.ue.name, err)
		}
	}
	for i, p := range l.pdrs {
		d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(p.DN), Timeout: 5 * time.Second,
			Control: sockOpts{reusePort: false}.control}
		dst := netip.AddrPortFrom(p.UE, p.UEPort).String()
		err := inNS(l.topo.dn.handle, func() error {
			c, err := d.DialContext(ctx, "tcp4", dst)
			if err != nil {
				return err
			}
			conns[i] = c.(*net.TCPConn)
			return nil
		})
		if err != nil {
			return fmt.Errorf("flow %s: tcp connect %v -> %s: %w", p.Name, p.DN, dst, err)
		}
	}
	return nil
}

func sendTCP(ctx context.Context, c *net.TCPConn, rate float64, start time.Time) {
	buf := make([]byte, 64<<10)
	time.Sleep(time.Until(start))
	if dl, ok := ctx.Deadline(); ok {
		c.SetWriteDeadline(dl)
	}
	var sent uint64
	for ctx.Err() == nil {
		chunk := buf
		if rate > 0 {
			due := uint64(time.Since(start).Seconds()*rate/8) + 1
			if due <= sent {
				time.Sleep(time.Millisecond)
				continue
			}
			chunk = buf[:min(uint64(len(buf)), due-sent)]
		}
		n, err := c.Write(chunk)
		sent += uint64(n)
		if err != nil {
			return
		}
	}
}

func receiveTCP(c net.Conn, iv []Interval, start, deadline time.Time) {
	buf := make([]byte, 256<<10)
	c.SetReadDeadline(deadline)
	for {
		n, err := c.Read(buf)
		s := int(time.Since(start) / time.Second)
		if n > 0 && s >= 0 && s < len(iv) {
			iv[s].Bytes += uint64(n)
		}
		if err != nil {
			return
		}
	}
}

func tcpRetrans(c *net.TCPConn) uint64 {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	var r uint64
	_ = rc.Control(func(fd uintptr) {
		if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			r = uint64(ti.Total_retrans)
		}
	})
	return r
}
