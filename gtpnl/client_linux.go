//go:build linux

package gtpnl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// client is the Linux implementation of Client.
type client struct {
	c      *genetlink.Conn
	family genetlink.Family
	// qos is the gtp5g-patch series' family, nil on a stock gtp5g.
	qos *genetlink.Family
	// dial opens another socket in the same netns, for subscriptions.
	dial func() (*genetlink.Conn, error)
	// nsFD is the client's netns (-1 if unknown); closed by Close.
	nsFD int

	reqMu sync.Mutex // one request at a time: a dump spans several reads

	mu     sync.Mutex
	subs   map[*subscription]struct{}
	closed bool
}

func dialConn() (*genetlink.Conn, error) { return genetlink.Dial(nil) }

// newClient opens a generic netlink socket and resolves the gtp5g family.
// It remembers the calling thread's netns, so that subscriptions opened
// later, from any goroutine, join the QoS group in the same netns (gtp5g
// multicasts events in the netns of the device).
func newClient() (*client, error) {
	nsFD, _ := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	conn, err := dialConn()
	if err != nil {
		if nsFD >= 0 {
			_ = unix.Close(nsFD)
		}
		return nil, fmt.Errorf("gtp5g: open generic netlink socket: %w", err)
	}
	c, err := initClient(conn, func() (*genetlink.Conn, error) { return dialInNetNS(nsFD) })
	if err != nil {
		if nsFD >= 0 {
			_ = unix.Close(nsFD)
		}
		return nil, err
	}
	c.nsFD = nsFD
	return c, nil
}

// dialInNetNS opens a generic netlink socket in the netns nsFD refers to:
// directly when the calling thread is already there (no privilege needed),
// else by entering it (CAP_SYS_ADMIN). nsFD < 0: the calling thread's.
func dialInNetNS(nsFD int) (*genetlink.Conn, error) {
	if nsFD < 0 || sameNetNS(nsFD) {
		return dialConn()
	}
	return genetlink.Dial(&netlink.Config{NetNS: nsFD})
}

// sameNetNS reports whether nsFD is the calling thread's netns.
func sameNetNS(nsFD int) bool {
	var a, b unix.Stat_t
	if unix.Fstat(nsFD, &a) != nil || unix.Stat("/proc/thread-self/ns/net", &b) != nil {
		return true // cannot tell: stay where we are
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// initClient resolves the gtp5g family and, if present, the gtp5g_qos
// family on conn (closing conn on failure).
func initClient(conn *genetlink.Conn, dial func() (*genetlink.Conn, error)) (*client, error) {
	f, err := conn.GetFamily(familyName)
	if err != nil {
		_ = conn.Close()
		if errors.Is(err, os.ErrNotExist) {
			return nil, errNotLoaded{err: err}
		}
		return nil, opError("resolve generic netlink family", err)
	}
	c := &client{c: conn, family: f, dial: dial, nsFD: -1, subs: map[*subscription]struct{}{}}
	// gtp5g_qos is listed, not looked up by name: the kernel answers a
	// lookup of a family it does not have by trying to load a module for
	// it (request_module, a modprobe run on every Dial on a stock
	// gtp5g), and gtp5g_qos can only come with gtp5g's own module.
	fams, err := conn.ListFamilies()
	if err != nil {
		_ = conn.Close()
		return nil, opError("list generic netlink families", err)
	}
	for i := range fams {
		if fams[i].Name == qosFamilyName {
			c.qos = &fams[i]
		}
	}
	return c, nil
}

// Close closes the socket and every subscription's socket.
func (c *client) Close() error {
	c.mu.Lock()
	c.closed = true
	subs := c.subs
	c.subs = map[*subscription]struct{}{}
	nsFD := c.nsFD
	c.nsFD = -1
	c.mu.Unlock()
	for s := range subs {
		_ = s.close()
	}
	if nsFD > 0 {
		_ = unix.Close(nsFD)
	}
	return c.c.Close()
}

// execute sends one request to family f and returns its reply messages.
//
// It does not use genetlink.Conn.Execute: gtp5g v0.10.2 puts its dump
// replies without NLM_F_MULTI (genlmsg_put with flags 0), so
// mdlayher/netlink stops reading after the first datagram, truncating a
// dump larger than one socket buffer and leaving the rest, and the
// NLMSG_DONE that the kernel sends in a datagram of its own, to be read as
// the reply to the next request ("mismatched sequence"). So a dump is read
// datagram by datagram until that DONE; replies of other sequence numbers
// (leftovers of an interrupted request) are skipped. (gtp5g_qos's dumps
// are well-formed multi-part replies; the same loop reads them.)
func (c *client) execute(op string, f *genetlink.Family, cmd uint8, flags netlink.HeaderFlags, data []byte) ([]genetlink.Message, error) {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	req, err := c.c.Send(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: f.Version},
		Data:   data,
	}, f.ID, flags)
	if err != nil {
		return nil, opError(op, err)
	}
	dump := flags&netlink.Dump == netlink.Dump
	var out []genetlink.Message
	for {
		gmsgs, nmsgs, err := c.c.Receive()
		if err != nil {
			return nil, opError(op, err)
		}
		if len(nmsgs) == 0 {
			// A datagram holding only NLMSG_DONE (end of a dump), or an
			// empty reply.
			return out, nil
		}
		mine := 0
		for i, nm := range nmsgs {
			if nm.Header.Sequence != req.Header.Sequence || (nm.Header.PID != 0 && req.Header.PID != 0 && nm.Header.PID != req.Header.PID) {
				continue // stale: not the reply to this request
			}
			mine++
			switch nm.Header.Type {
			case netlink.Noop, netlink.Error, netlink.Done, netlink.Overrun:
				continue // an ACK (errors came back from Receive already)
			}
			if i < len(gmsgs) {
				out = append(out, gmsgs[i])
			}
		}
		last := nmsgs[len(nmsgs)-1]
		switch {
		case mine == 0:
			// Only stale messages: keep reading for our reply.
		case !dump:
			return out, nil
		case last.Header.Flags&netlink.Multi != 0:
			// A well-formed multi-part reply: netlink read it through DONE.
			return out, nil
		}
	}
}

// qosExecute is execute on the gtp5g_qos family, which only the
// gtp5g-patch series has: without it, ErrNotSupported.
func (c *client) qosExecute(op string, cmd uint8, flags netlink.HeaderFlags, data []byte) ([]genetlink.Message, error) {
	if c.qos == nil {
		return nil, fmt.Errorf("gtp5g %s: %w", op, ErrNotSupported)
	}
	return c.execute(op, c.qos, cmd, flags, data)
}

// version asks gtp5g for its version string, exactly as go-upf does (no
// attributes).
func (c *client) version() (string, error) {
	msgs, err := c.execute("get version", &c.family, cmdGetVersion, netlink.Request, nil)
	if err != nil {
		return "", err
	}
	return parseVersion(msgs)
}

// features asks gtp5g_qos for its feature bitmap; none without it.
func (c *client) features() (Features, error) {
	if c.qos == nil {
		return 0, nil
	}
	msgs, err := c.qosExecute("get features", qosCmdGetFeatures, netlink.Request, nil)
	if err != nil {
		return 0, err
	}
	return parseFeatures(msgs)
}

func (c *client) families() ([]Family, error) {
	desc := func(f *genetlink.Family) Family {
		out := Family{Name: f.Name, ID: f.ID, Version: f.Version}
		for _, g := range f.Groups {
			out.Groups = append(out.Groups, g.Name)
		}
		return out
	}
	fams := []Family{desc(&c.family)}
	if c.qos != nil {
		q := desc(c.qos)
		feats, err := c.features()
		if err != nil {
			return nil, err
		}
		q.Features = feats
		fams = append(fams, q)
	}
	return fams, nil
}

func (c *client) alive() error {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	fams, err := c.c.ListFamilies()
	if err != nil {
		return opError("list generic netlink families", err)
	}
	for _, f := range fams {
		if f.Name != familyName {
			continue
		}
		if f.ID != c.family.ID {
			return fmt.Errorf("gtp5g was reloaded: generic netlink family %s has id %d, was %d", familyName, f.ID, c.family.ID)
		}
		return nil
	}
	return errNotLoaded{err: os.ErrNotExist}
}

// dump runs a GET dump of family f covering every gtp5g device in the
// netns: gtp5g's dumpit (and gtp5g_qos's) walks its per-netns device list
// itself; no link attribute is needed.
func (c *client) dump(what string, f *genetlink.Family, cmd uint8) ([]genetlink.Message, error) {
	return c.execute("dump "+what, f, cmd, netlink.Request|netlink.Dump, nil)
}

// qosRecords dumps gtp5g_qos's PDR or QER records (nil on a stock gtp5g).
func (c *client) qosRecords(what string, cmd uint8, idAttr uint16) ([]markRecord, error) {
	if c.qos == nil {
		return nil, nil
	}
	msgs, err := c.dump(what, c.qos, cmd)
	if err != nil {
		return nil, err
	}
	return parseMarkRecords(what, idAttr, msgs)
}

func (c *client) qers() ([]QER, error) {
	msgs, err := c.dump("QERs", &c.family, cmdGetQER)
	if err != nil {
		return nil, err
	}
	out, err := parseQERs(msgs)
	if err != nil {
		return nil, err
	}
	recs, err := c.qosRecords("QER flow marks", qosCmdGetQER, qosAttrQERID)
	if err != nil {
		return nil, err
	}
	withQERMarks(out, recs)
	return dedupe(out, qerKey), nil
}

func (c *client) pdrs() ([]PDR, error) {
	msgs, err := c.dump("PDRs", &c.family, cmdGetPDR)
	if err != nil {
		return nil, err
	}
	out, err := parsePDRs(msgs)
	if err != nil {
		return nil, err
	}
	recs, err := c.qosRecords("PDR flow marks", qosCmdGetPDR, qosAttrPDRID)
	if err != nil {
		return nil, err
	}
	withPDRMarks(out, recs)
	return dedupe(out, pdrKey), nil
}

func (c *client) fars() ([]FAR, error) {
	msgs, err := c.dump("FARs", &c.family, cmdGetFAR)
	if err != nil {
		return nil, err
	}
	out, err := parseFARs(msgs)
	if err != nil {
		return nil, err
	}
	return dedupe(out, farKey), nil
}

func (c *client) markLayout() (MarkLayout, error) {
	msgs, err := c.qosExecute("get QoS mark mode", qosCmdGetMark, netlink.Request, nil)
	if err != nil {
		return MarkLayout{}, err
	}
	return parseMarkLayout(msgs)
}

func (c *client) setMarkMode(m MarkMode) error {
	if m > MarkPDR {
		return fmt.Errorf("gtp5g set QoS mark mode: invalid mode %d", uint8(m))
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint8(qosAttrMarkMode, uint8(m))
	data, err := ae.Encode()
	if err != nil {
		return err
	}
	_, err = c.qosExecute("set QoS mark mode "+m.String(), qosCmdSetMark, netlink.Request|netlink.Acknowledge, data)
	return err
}

func (c *client) policer() (bool, error) {
	msgs, err := c.qosExecute("get policer", qosCmdGetPolicer, netlink.Request, nil)
	if err != nil {
		return false, err
	}
	return parsePolicer(msgs)
}

func (c *client) setPolicer(on bool) error {
	var v uint8
	if on {
		v = 1
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint8(qosAttrPolicer, v)
	data, err := ae.Encode()
	if err != nil {
		return err
	}
	_, err = c.qosExecute(fmt.Sprintf("set policer %d", v), qosCmdSetPolicer, netlink.Request|netlink.Acknowledge, data)
	return err
}

// subscription is the Linux implementation of Subscription.
type subscription struct {
	parent *client
	c      *genetlink.Conn
	stop   func() bool // stops the ctx watcher

	mu      sync.Mutex
	closed  bool
	haveSeq bool
	lastSeq uint32
}

// subscribe opens a socket of its own, joins gtp5g_qos's event group and
// watches ctx.
func (c *client) subscribe(ctx context.Context) (*Subscription, error) {
	var id uint32
	found := false
	if c.qos != nil {
		for _, g := range c.qos.Groups {
			if g.Name == qosGroup {
				id, found = g.ID, true
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("gtp5g subscribe to QoS events: no multicast group %q in family %q: %w", qosGroup, qosFamilyName, ErrNotSupported)
	}
	conn, err := c.dial()
	if err != nil {
		return nil, fmt.Errorf("gtp5g subscribe to QoS events: open socket: %w", err)
	}
	// A large buffer rides out event bursts (a UPF installing thousands of
	// sessions); overruns still surface as ErrResync. Best effort: without
	// privileges the kernel caps it at net.core.rmem_max.
	_ = conn.SetReadBuffer(DefaultEventsBuffer)
	if err := conn.JoinGroup(id); err != nil {
		_ = conn.Close()
		return nil, opError("join multicast group "+qosFamilyName+"/"+qosGroup, err)
	}
	return c.newSubscription(ctx, conn)
}

// newSubscription registers a subscription reading conn (already joined
// to the group) and closes it when ctx is done.
func (c *client) newSubscription(ctx context.Context, conn *genetlink.Conn) (*Subscription, error) {
	s := &subscription{parent: c, c: conn}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = conn.Close()
		return nil, fmt.Errorf("gtp5g subscribe to QoS events: %w", net.ErrClosed)
	}
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { _ = s.close() })
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
	return &Subscription{s: s}, nil
}

// receive reads the next batch of events, checking the sequence counter.
func (s *subscription) receive() ([]Event, error) {
	msgs, _, err := s.c.Receive()
	if err != nil {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("gtp5g receive QoS events: %w", net.ErrClosed)
		}
		err = opError("receive QoS events", err)
		if errors.Is(err, ErrResync) {
			s.skipQueued()
		}
		return nil, err
	}
	evs, err := parseEvents(msgs)
	if err != nil {
		return nil, fmt.Errorf("gtp5g receive QoS events: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gapErr error
	for _, ev := range evs {
		if s.haveSeq && ev.Seq != s.lastSeq+1 && gapErr == nil {
			gapErr = fmt.Errorf("gtp5g receive QoS events: sequence gap before seq %d (%d events lost): %w",
				ev.Seq, ev.Seq-s.lastSeq-1, ErrResync)
		}
		s.haveSeq, s.lastSeq = true, ev.Seq
	}
	return evs, gapErr
}

// skipQueued reads for at most drainFor, and stops once the socket has
// been quiet for drainIdle: a module sending events faster than they are
// read would keep it going.
const (
	drainFor  = 200 * time.Millisecond
	drainIdle = 5 * time.Millisecond
)

// skipQueued is called after an overrun. The caller dumps every rule
// next, and that dump reflects everything queued on the socket, so the
// queued events are read and dropped; the kernel dropped the events after
// them, so the first event read afterwards starts a new run of sequence
// numbers. Without this, the gap left by the lost events would be
// reported again at the first event after the queue, for a second dump
// the first one already covers. Best effort: a socket without read
// deadlines (tests) keeps its queue, and only the run restarts.
func (s *subscription) skipQueued() {
	end := time.Now().Add(drainFor)
	for time.Now().Before(end) {
		if s.c.SetReadDeadline(time.Now().Add(drainIdle)) != nil {
			break
		}
		if _, _, err := s.c.Receive(); err != nil && !errors.Is(err, unix.ENOBUFS) {
			break // quiet for drainIdle, or the socket closed
		}
	}
	_ = s.c.SetReadDeadline(time.Time{})
	s.mu.Lock()
	s.haveSeq = false
	s.mu.Unlock()
}

func (s *subscription) setReadBuffer(n int) error {
	if err := s.c.SetReadBuffer(n); err != nil {
		return opError(fmt.Sprintf("set the QoS event socket's buffer to %d bytes", n), err)
	}
	return nil
}

// close leaves the group by closing the socket; idempotent.
func (s *subscription) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	s.parent.mu.Lock()
	delete(s.parent.subs, s)
	s.parent.mu.Unlock()
	return s.c.Close()
}
