package htb

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// rtnl is gtpqos's own route-netlink socket, for the HTB messages
// vishvananda/netlink v1.3.1 cannot express: the root qdisc's size table
// (TCA_STAB), the rate spec's overhead, reading both back, and several
// messages sent in one sendmsg (the kernel handles all of them inside that
// one system call, so a signal cannot land between them). A Backend keeps
// one for its life, opened in the device's network namespace.
type rtnl struct {
	mu  sync.Mutex
	s   *nl.NetlinkSocket
	pid uint32
	seq uint32
}

// rtnlTimeout bounds one send or receive (a dump of 65k classes arrives in
// many receives, each well below it).
const rtnlTimeout = 30 * time.Second

// dialRtnl opens a route-netlink socket in ns (netns.None(): the current
// network namespace).
func dialRtnl(ns netns.NsHandle) (*rtnl, error) {
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open route netlink: %w", err)
	}
	tv := unix.NsecToTimeval(rtnlTimeout.Nanoseconds())
	_ = s.SetSendTimeout(&tv)
	_ = s.SetReceiveTimeout(&tv)
	// Error strings from the kernel, and ACKs without an echo of the
	// request.
	_ = s.SetExtAck(true)
	_ = unix.SetsockoptInt(s.GetFd(), unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	pid, err := s.GetPid()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("route netlink: %w", err)
	}
	return &rtnl{s: s, pid: pid}, nil
}

// setReceiveTimeout bounds each later receive by d.
func (c *rtnl) setReceiveTimeout(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil {
		return errors.New("route netlink socket closed")
	}
	tv := unix.NsecToTimeval(d.Nanoseconds())
	return c.s.SetReceiveTimeout(&tv)
}

// close releases the socket.
func (c *rtnl) close() {
	if c != nil && c.s != nil {
		c.s.Close()
		c.s = nil
	}
}

// exec sends reqs (each with NLM_F_ACK) in one sendmsg and returns one
// error per request, from its ACK (nil: done). err is set when the batch
// could not be sent or its ACKs not read: the kernel's state is then
// unknown.
func (c *rtnl) exec(reqs ...*nl.NetlinkRequest) (errs []error, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil {
		return nil, errors.New("route netlink socket closed")
	}
	first := c.seq + 1
	var buf []byte
	for _, r := range reqs {
		c.seq++
		r.Seq = c.seq
		r.Flags |= unix.NLM_F_ACK
		buf = append(buf, r.Serialize()...)
	}
	if err := c.send(buf); err != nil {
		return nil, err
	}
	errs = make([]error, len(reqs))
	for got := 0; got < len(reqs); {
		msgs, err := c.receive()
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			i := int(m.Header.Seq) - int(first)
			if m.Header.Type != unix.NLMSG_ERROR || i < 0 || i >= len(reqs) {
				continue // a reply to an earlier, abandoned request
			}
			errs[i] = ackError(m)
			got++
		}
	}
	return errs, nil
}

// do sends one request and returns its ACK's error.
func (c *rtnl) do(req *nl.NetlinkRequest) error {
	errs, err := c.exec(req)
	if err != nil {
		return err
	}
	return errs[0]
}

// query sends req and calls f with the payload of every reply of type typ
// until the kernel says it is done: a dump (NLM_F_DUMP), or a get whose
// one reply ends it.
func (c *rtnl) query(req *nl.NetlinkRequest, typ uint16, f func([]byte) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil {
		return errors.New("route netlink socket closed")
	}
	c.seq++
	req.Seq = c.seq
	if err := c.send(req.Serialize()); err != nil {
		return err
	}
	dump := req.Flags&unix.NLM_F_DUMP == unix.NLM_F_DUMP
	var ferr error
	for {
		msgs, err := c.receive()
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Seq != req.Seq {
				continue
			}
			if m.Header.Flags&unix.NLM_F_DUMP_INTR != 0 && ferr == nil {
				// The tree changed while the kernel dumped it: what was read
				// may be inconsistent.
				ferr = errors.New("dump interrupted by a concurrent change; read again")
			}
			switch {
			case m.Header.Type == unix.NLMSG_DONE:
				return ferr
			case m.Header.Type == unix.NLMSG_ERROR:
				if e := ackError(m); e != nil || !dump {
					return errors.Join(e, ferr)
				}
			case m.Header.Type == typ && ferr == nil:
				ferr = f(m.Data)
			}
			if !dump && m.Header.Type == typ {
				return ferr
			}
		}
	}
}

func (c *rtnl) send(b []byte) error {
	fd := c.s.GetFd()
	for {
		err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("route netlink send: %w", err)
		}
		return nil
	}
}

func (c *rtnl) receive() ([]syscall.NetlinkMessage, error) {
	msgs, from, err := c.s.Receive()
	if err != nil {
		return nil, fmt.Errorf("route netlink receive: %w", err)
	}
	if from.Pid != nl.PidKernel {
		return nil, nil
	}
	return msgs, nil
}

// ackError decodes an NLMSG_ERROR message: nil for an ACK, else the errno
// with the kernel's message when it gave one.
func ackError(m syscall.NetlinkMessage) error {
	if len(m.Data) < 4 {
		return errors.New("short netlink error message")
	}
	native := nl.NativeEndian()
	errno := int32(native.Uint32(m.Data[0:4]))
	if errno == 0 {
		return nil
	}
	err := error(syscall.Errno(-errno))
	rest := m.Data[4:]
	if m.Header.Flags&unix.NLM_F_ACK_TLVS == 0 || len(rest) < unix.SizeofNlMsghdr {
		return err
	}
	skip := unix.SizeofNlMsghdr
	if m.Header.Flags&unix.NLM_F_CAPPED == 0 {
		skip = nlmAlign(int(native.Uint32(rest[0:4])))
	}
	if skip > len(rest) {
		return err
	}
	attrs, perr := nl.ParseRouteAttr(rest[skip:])
	if perr != nil {
		return err
	}
	for _, a := range attrs {
		if a.Attr.Type == unix.NLMSGERR_ATTR_MSG {
			return fmt.Errorf("%w: %s", err, unix.ByteSliceToString(a.Value))
		}
	}
	return err
}

func nlmAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }
