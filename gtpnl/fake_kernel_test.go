//go:build linux

package gtpnl

import (
	"context"
	"errors"
	"iter"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
	"golang.org/x/sys/unix"
)

// fakeKernel is the kernel side of a gtp5g with the gtpqos patch series,
// behind netlink sockets of its own, for benchmarks of the production
// path: everything above the socket (Dial's family lookups, the dumps and
// their decoders, the subscription's group join and sequence check, the
// event decoder) is gtpnl's own code. It keeps sessions of one downlink
// flow each (a FAR, a QER with the flow's rates, a PDR with its QFI and
// flow mark), answers the controller's family requests and the dumps of
// both families from them, and multicasts an event per rule change, in
// the order gtp5g makes them, to the sockets that joined the QoS group.
type fakeKernel struct {
	tb testing.TB

	mu sync.Mutex
	// sessions are indexed by SEID (the benchmark's are 1..n and those it
	// adds after them): a table, not a map, so that the fake, which
	// shares the benchmark's process, weighs as little as it can beside
	// the daemon it serves.
	sessions []fakeSession
	seq      uint32
	joined   map[*fakeSocket]bool
}

// fakeSession is one session's flow: rates in kbit/s as gtp5g keeps them.
type fakeSession struct {
	gbr, mbr uint64
	mark     uint32
	ok       bool // the SEID has a session
}

func newFakeKernel(tb testing.TB) *fakeKernel {
	return &fakeKernel{tb: tb, joined: map[*fakeSocket]bool{}}
}

// session returns session seid; k.mu is held.
func (k *fakeKernel) session(seid uint64) (fakeSession, bool) {
	if seid >= uint64(len(k.sessions)) {
		return fakeSession{}, false
	}
	return k.sessions[seid], k.sessions[seid].ok
}

// put sets session seid (ok false removes it); k.mu is held.
func (k *fakeKernel) put(seid uint64, s fakeSession) {
	if seid >= uint64(len(k.sessions)) {
		if !s.ok {
			return
		}
		k.sessions = append(k.sessions, make([]fakeSession, int(seid)+1-len(k.sessions))...)
	}
	k.sessions[seid] = s
}

// Link and interface name of the fake's gtp5g device.
const fakeLink = 7

func (s fakeSession) rules(seid uint64) (kfar, kqer, kpdr) {
	far := kfar{id: 1, seid: seid, action: 2, fwd: true, ohc: true, desc: 0x100, teid: uint32(seid), peer: "10.100.0.2", port: 2152}
	qer := kqer{id: 1, seid: seid, qfi: 2, gbrDL: s.gbr, mbrDL: s.mbr, gbrUL: s.gbr, mbrUL: s.mbr}
	pdr := kpdr{id: 1, precedence: 100, seid: seid, farID: 1, qerIDs: []uint32{1}, srcIntf: u8p(1),
		ueAddr: fakeUEAddr(seid)}
	return far, qer, pdr
}

// fakeUEAddr is session seid's UE address, 10.x.y.z.
func fakeUEAddr(seid uint64) string {
	b := []byte{10, byte(seid >> 16), byte(seid >> 8), byte(seid)}
	return net.IP(b).String()
}

// setSession adds the session (events: FAR, QER, PDR added) or changes its
// QER (one update event), with gbr and mbr in kbit/s; the flow mark is the
// SEID's low 24 bits.
func (k *fakeKernel) setSession(seid, gbr, mbr uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, had := k.session(seid)
	s := fakeSession{gbr: gbr, mbr: mbr, mark: uint32(seid) & 0xffffff, ok: true}
	k.put(seid, s)
	far, qer, pdr := s.rules(seid)
	if had {
		k.multicast(qerEvent(k.tb, 2, k.next(), qer, s.mark))
		return
	}
	k.multicast(farEvent(k.tb, 1, k.next(), far))
	k.multicast(qerEvent(k.tb, 1, k.next(), qer, s.mark))
	k.multicast(pdrEvent(k.tb, 1, k.next(), pdr, qer.qfi, s.mark))
}

// deleteSession removes the session's rules as the SMF's session deletion
// does, PDR first (three delete events).
func (k *fakeKernel) deleteSession(seid uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.session(seid)
	if !ok {
		return
	}
	k.put(seid, fakeSession{})
	far, qer, pdr := s.rules(seid)
	k.multicast(pdrEvent(k.tb, 3, k.next(), pdr, qer.qfi, s.mark))
	k.multicast(qerEvent(k.tb, 3, k.next(), qer, s.mark))
	k.multicast(farEvent(k.tb, 3, k.next(), far))
}

// loadSessions sets n sessions 1..n without events, as if they were there
// before anyone subscribed.
func (k *fakeKernel) loadSessions(n int, gbr, mbr uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sessions = slices.Grow(k.sessions, max(0, n+1-len(k.sessions)))
	for seid := uint64(1); seid <= uint64(n); seid++ {
		k.put(seid, fakeSession{gbr: gbr, mbr: mbr, mark: uint32(seid) & 0xffffff, ok: true})
	}
}

// next is the next event sequence number; k.mu is held.
func (k *fakeKernel) next() uint32 { k.seq++; return k.seq }

// multicast sends an event to every joined socket; k.mu is held.
func (k *fakeKernel) multicast(m genetlink.Message) {
	b, err := m.MarshalBinary()
	if err != nil {
		k.tb.Errorf("marshal event: %v", err)
		return
	}
	nm := netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(testQoSFamilyID)}, Data: b}
	for s := range k.joined {
		select {
		case s.events <- nm:
		default:
			s.overrun() // the socket's buffer is full: the kernel's ENOBUFS
		}
	}
}

// fakeSocketEvents is how many events a socket's buffer holds.
const fakeSocketEvents = 4096

// dial opens a socket to the fake, as genetlink.Dial opens one to the
// kernel.
func (k *fakeKernel) dial() (*genetlink.Conn, error) {
	s := &fakeSocket{k: k, events: make(chan netlink.Message, fakeSocketEvents), closed: make(chan struct{})}
	return genetlink.NewConn(netlink.NewConn(s, 0)), nil
}

// client returns a gtpnl client on the fake, made as Dial makes one.
func (k *fakeKernel) client() (*Client, error) {
	conn, _ := k.dial()
	c, err := initClient(conn, k.dial)
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// fakeDumpPart is how many sessions one read of a rule dump carries: the
// kernel fills one skb per read, and a fake that built a whole dump up
// front would hold tens of megabytes at 65k sessions that the benchmark
// would count as the daemon's.
const fakeDumpPart = 64

// serve answers one request with the messages the kernel would send back;
// a dump of rules comes in parts instead, made as they are read (more,
// which returns the next part and whether it is the last).
func (k *fakeKernel) serve(req netlink.Message) (out []netlink.Message, more func() ([]netlink.Message, bool)) {
	var greq genetlink.Message
	if err := greq.UnmarshalBinary(req.Data); err != nil {
		k.tb.Errorf("request does not decode: %v", err)
		return errorReply(req, unix.EINVAL), nil
	}
	if t := req.Header.Type; req.Header.Flags&netlink.Dump != 0 && (t == testFamilyID || t == testQoSFamilyID) {
		return k.dumpParts(req, greq.Header.Command)
	}
	fn := serveFamilies(patchedFamilies, func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		return nil, errFakeUnsupported
	})
	gmsgs, err := fn(greq, req)
	switch {
	case errors.Is(err, errFakeUnsupported):
		k.tb.Errorf("the fake gtp5g does not serve family %#x command %d", uint16(req.Header.Type), greq.Header.Command)
		return errorReply(req, unix.EOPNOTSUPP), nil
	case err != nil: // a family the fake does not have
		return errorReply(req, unix.ENOENT), nil
	}
	return replies(req, gmsgs), nil
}

var errFakeUnsupported = errors.New("not served by the fake gtp5g")

// dumpParts answers a GET dump of gtp5g or gtp5g_qos from the sessions as
// they are when it starts, fakeDumpPart sessions per read.
func (k *fakeKernel) dumpParts(req netlink.Message, cmd uint8) ([]netlink.Message, func() ([]netlink.Message, bool)) {
	family := req.Header.Type
	if _, err := k.record(family, cmd, 1, fakeSession{}); err != nil {
		k.tb.Errorf("the fake gtp5g does not serve family %#x command %d", uint16(family), cmd)
		return errorReply(req, unix.EOPNOTSUPP), nil
	}
	type entry struct {
		seid uint64
		s    fakeSession
	}
	k.mu.Lock()
	list := make([]entry, 0, len(k.sessions))
	for seid, s := range k.sessions {
		if s.ok {
			list = append(list, entry{uint64(seid), s})
		}
	}
	k.mu.Unlock()
	return nil, func() ([]netlink.Message, bool) {
		n := min(fakeDumpPart, len(list))
		gmsgs := make([]genetlink.Message, 0, n)
		for _, e := range list[:n] {
			m, _ := k.record(family, cmd, e.seid, e.s)
			gmsgs = append(gmsgs, m)
		}
		list = list[n:]
		out := replies(req, gmsgs)
		if len(list) > 0 {
			out = out[:len(out)-1] // NLMSG_DONE ends the last part only
		}
		return out, len(list) == 0
	}
}

// record is one session's rule of the kind a dump command asks for.
func (k *fakeKernel) record(family netlink.HeaderType, cmd uint8, seid uint64, s fakeSession) (genetlink.Message, error) {
	far, qer, pdr := s.rules(seid)
	switch {
	case family == testFamilyID && cmd == cmdGetFAR:
		return reply(cmd, far.attrs(k.tb)), nil
	case family == testFamilyID && cmd == cmdGetQER:
		return reply(cmd, qer.attrs(k.tb)), nil
	case family == testFamilyID && cmd == cmdGetPDR:
		return reply(cmd, pdr.attrs(k.tb)), nil
	case family == testQoSFamilyID && cmd == qosCmdGetQER:
		return reply(cmd, qerRecord(k.tb, fakeLink, seid, qer.id, s.mark)), nil
	case family == testQoSFamilyID && cmd == qosCmdGetPDR:
		return reply(cmd, pdrRecord(k.tb, fakeLink, seid, pdr.id, qer.qfi, s.mark)), nil
	}
	return genetlink.Message{}, errFakeUnsupported
}

// replies wraps gmsgs as the kernel's answer to req: a dump's parts carry
// NLM_F_MULTI and end with NLMSG_DONE.
func replies(req netlink.Message, gmsgs []genetlink.Message) []netlink.Message {
	dump := req.Header.Flags&netlink.Dump == netlink.Dump
	h := netlink.Header{Type: req.Header.Type, Sequence: req.Header.Sequence, PID: req.Header.PID}
	if dump {
		h.Flags = netlink.Multi
	}
	out := make([]netlink.Message, 0, len(gmsgs)+1)
	for _, gm := range gmsgs {
		b, _ := gm.MarshalBinary()
		out = append(out, netlink.Message{Header: h, Data: b})
	}
	if dump {
		done := h
		done.Type = netlink.Done
		out = append(out, netlink.Message{Header: done, Data: make([]byte, 4)})
	}
	return out
}

// errorReply is the kernel's NLMSG_ERROR for req.
func errorReply(req netlink.Message, errno unix.Errno) []netlink.Message {
	msgs, _ := nltest.Error(int(errno), []netlink.Message{req})
	return msgs
}

// fakeSocket is one netlink socket to the fake kernel.
type fakeSocket struct {
	k      *fakeKernel
	mu     sync.Mutex
	queue  []netlink.Message                // replies to requests, read before events
	more   func() ([]netlink.Message, bool) // a dump's next part
	lost   bool                             // events were dropped: the next read fails
	events chan netlink.Message
	closed chan struct{}
	once   sync.Once
}

func (s *fakeSocket) Send(m netlink.Message) error {
	out, more := s.k.serve(m)
	s.mu.Lock()
	s.queue, s.more = append(s.queue, out...), more
	s.mu.Unlock()
	return nil
}

func (s *fakeSocket) SendMessages(ms []netlink.Message) error {
	for _, m := range ms {
		if err := s.Send(m); err != nil {
			return err
		}
	}
	return nil
}

// Receive returns the replies to the last request, else blocks for the
// next event (one per datagram, as gtp5g multicasts them).
func (s *fakeSocket) Receive() ([]netlink.Message, error) {
	s.mu.Lock()
	if q := s.queue; len(q) > 0 {
		s.queue = nil
		s.mu.Unlock()
		return q, nil
	}
	if s.more != nil {
		part, last := s.more()
		if last {
			s.more = nil
		}
		s.mu.Unlock()
		return part, nil
	}
	lost := s.lost
	s.lost = false
	s.mu.Unlock()
	if lost {
		return nil, unix.ENOBUFS
	}
	select {
	case m := <-s.events:
		return []netlink.Message{m}, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

func (s *fakeSocket) ReceiveIter() iter.Seq2[netlink.Message, error] {
	return func(yield func(netlink.Message, error) bool) {
		msgs, err := s.Receive()
		if err != nil {
			yield(netlink.Message{}, err)
			return
		}
		for _, m := range msgs {
			if !yield(m, nil) {
				return
			}
		}
	}
}

func (s *fakeSocket) overrun() {
	s.mu.Lock()
	s.lost = true
	s.mu.Unlock()
}

func (s *fakeSocket) Close() error {
	s.once.Do(func() {
		close(s.closed)
		s.k.mu.Lock()
		delete(s.k.joined, s)
		s.k.mu.Unlock()
	})
	return nil
}

// JoinGroup joins the QoS event group (the only group the fake has).
func (s *fakeSocket) JoinGroup(group uint32) error {
	if group != qosFamily.Groups[0].ID {
		return unix.EINVAL
	}
	s.k.mu.Lock()
	s.k.joined[s] = true
	s.k.mu.Unlock()
	return nil
}

func (s *fakeSocket) LeaveGroup(uint32) error {
	s.k.mu.Lock()
	delete(s.k.joined, s)
	s.k.mu.Unlock()
	return nil
}

// TestFakeKernel checks the benchmark's fake against gtpnl's own client:
// Dial finds both families, the dumps carry every session's rules with
// their flow marks, and a subscription gets each rule change in order,
// an overflow as ErrResync.
func TestFakeKernel(t *testing.T) {
	k := newFakeKernel(t)
	k.loadSessions(3, 1000, 2000)
	c, err := k.client()
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer c.Close()
	qers, err := c.QERs()
	if err != nil || len(qers) != 3 {
		t.Fatalf("QERs: %d, %v; want 3", len(qers), err)
	}
	for _, q := range qers {
		if q.FlowMark != uint32(q.SEID) || q.GBR.Downlink != 1e6 || q.MBR.Downlink != 2e6 {
			t.Errorf("QER %+v; want flow mark = SEID, GBR 1 Mbit/s, MBR 2 Mbit/s", q)
		}
	}
	pdrs, err := c.PDRs()
	if err != nil || len(pdrs) != 3 || pdrs[0].QFI != 2 || pdrs[0].FlowMark == 0 {
		t.Fatalf("PDRs: %+v, %v; want 3 with QFI 2 and a flow mark", pdrs, err)
	}
	if fars, err := c.FARs(); err != nil || len(fars) != 3 {
		t.Fatalf("FARs: %d, %v; want 3", len(fars), err)
	}
	sub, err := c.Subscribe(context.Background())
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	k.setSession(9, 0, 3000)
	k.setSession(9, 0, 4000)
	k.deleteSession(9)
	var got []Event
	for len(got) < 7 {
		evs, err := sub.Receive()
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		got = append(got, evs...)
	}
	want := []EventOp{EventAdd, EventAdd, EventAdd, EventUpdate, EventDelete, EventDelete, EventDelete}
	for i, e := range got {
		if i >= len(want) || e.Op != want[i] || e.Seq != got[0].Seq+uint32(i) {
			t.Fatalf("event %d: %s (seq %d); want %s with seq %d", i, e, e.Seq, want[min(i, len(want)-1)], got[0].Seq+uint32(i))
		}
	}
	if q := got[3].QER; q == nil || q.SEID != 9 || q.MBR.Downlink != 4e6 {
		t.Errorf("update event %s; want session 9's QER at 4 Mbit/s", got[3])
	}
	for i := 0; i < fakeSocketEvents+1; i++ {
		k.setSession(10, 0, uint64(1000+i))
	}
	if _, err := sub.Receive(); !errors.Is(err, ErrResync) {
		t.Fatalf("Receive after an overflow: %v; want ErrResync", err)
	}
}
