//go:build linux

package gtpnl

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
)

// gtp5g v0.10.2 sends dump replies without NLM_F_MULTI, one datagram per
// socket buffer, and NLMSG_DONE in a datagram of its own. This fake talks
// at the netlink level to reproduce exactly that, plus a stale message of
// an earlier request, and checks that the whole dump is read and that the
// next request on the same client gets its own reply.
func TestDumpSpansDatagrams(t *testing.T) {
	gmsg := func(t *testing.T, cmd uint8, data []byte) []byte {
		b, err := genetlink.Message{Header: genetlink.Header{Command: cmd}, Data: data}.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var seq, pid uint32
	msg := func(data []byte) netlink.Message {
		return netlink.Message{Header: netlink.Header{Type: testFamilyID, Sequence: seq, PID: pid}, Data: data}
	}
	var queue [][]netlink.Message // datagrams still to deliver
	fn := func(reqs []netlink.Message) ([]netlink.Message, error) {
		if len(reqs) == 1 {
			req := reqs[0]
			seq, pid = req.Header.Sequence, req.Header.PID
			var gm genetlink.Message
			if err := gm.UnmarshalBinary(req.Data); err != nil {
				return nil, err
			}
			switch gm.Header.Command {
			case cmdGetQER:
				if req.Header.Flags != netlink.Request|netlink.Dump {
					t.Errorf("dump flags %v", req.Header.Flags)
				}
				stale := msg(gmsg(t, cmdGetQER, kqer{id: 99}.attrs(t)))
				stale.Header.Sequence = seq - 1
				queue = [][]netlink.Message{
					{msg(gmsg(t, cmdGetQER, kqer{id: 2, seid: 5}.attrs(t))), msg(gmsg(t, cmdGetQER, kqer{id: 3, seid: 5}.attrs(t)))},
					{{Header: netlink.Header{Type: netlink.Done, Flags: netlink.Multi, Sequence: seq, PID: pid}, Data: make([]byte, 4)}},
				}
				return []netlink.Message{stale, msg(gmsg(t, cmdGetQER, kqer{id: 1, seid: 5}.attrs(t)))}, nil
			case cmdGetVersion:
				queue = nil
				return []netlink.Message{msg(gmsg(t, cmdGetVersion, []byte{0x0b, 0x00, 0x00, 0x00, '0', '.', '1', '0', '.', '2', 0x00, 0x00}))}, nil
			}
			t.Fatalf("unexpected command %d", gm.Header.Command)
		}
		// A further read: the next datagram of the dump.
		if len(queue) == 0 {
			t.Fatal("read past the end of the dump (would block on a real socket)")
		}
		d := queue[0]
		queue = queue[1:]
		return d, nil
	}
	c := &Client{c: &client{c: genetlink.NewConn(nltest.Dial(fn)), family: gtp5gFamily, subs: map[*subscription]struct{}{}}}
	defer c.Close()

	qers, err := c.QERs()
	if err != nil {
		t.Fatalf("QERs: %v", err)
	}
	want := []QER{{SEID: 5, ID: 1}, {SEID: 5, ID: 2}, {SEID: 5, ID: 3}}
	if diff := cmp.Diff(want, qers); diff != "" {
		t.Errorf("QERs differ (-want +got):\n%s", diff)
	}
	if len(queue) != 0 {
		t.Errorf("%d datagrams left unread (NLMSG_DONE not consumed)", len(queue))
	}
	v, err := c.Version()
	if err != nil || v != "0.10.2" {
		t.Fatalf("Version after a dump = %q, %v; want 0.10.2", v, err)
	}
}
