package lab

import (
	"context"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sockOpts are socket options set before bind.
type sockOpts struct {
	reusePort bool
	mark      uint32
	sndBuf    int // SO_SNDBUFFORCE bytes (0 = leave)
	rcvBuf    int // SO_RCVBUFFORCE bytes (0 = leave)
	// timestamps turns on SO_TIMESTAMPNS (kernel receive time per packet).
	timestamps bool
}

func (o sockOpts) control(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		set := func(name string, opt, v int) {
			if serr == nil {
				if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, v); err != nil {
					serr = fmt.Errorf("setsockopt %s=%d: %w", name, v, err)
				}
			}
		}
		if o.reusePort {
			set("SO_REUSEPORT", unix.SO_REUSEPORT, 1)
		}
		if o.mark != 0 {
			set("SO_MARK", unix.SO_MARK, int(o.mark))
		}
		if o.sndBuf > 0 {
			set("SO_SNDBUFFORCE", unix.SO_SNDBUFFORCE, o.sndBuf)
		}
		if o.timestamps {
			set("SO_TIMESTAMPNS", unix.SO_TIMESTAMPNS, 1)
		}
		if o.rcvBuf > 0 {
			set("SO_RCVBUFFORCE", unix.SO_RCVBUFFORCE, o.rcvBuf)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// listenUDP opens a UDP socket bound to addr inside ns.
func listenUDP(ns *namespace, addr string, o sockOpts) (*net.UDPConn, error) {
	var c net.PacketConn
	err := inNS(ns.handle, func() (err error) {
		lc := net.ListenConfig{Control: o.control}
		c, err = lc.ListenPacket(context.Background(), "udp4", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netns %s: udp socket on %s: %w", ns.name, addr, err)
	}
	return c.(*net.UDPConn), nil
}
