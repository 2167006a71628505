package edt

import (
	"encoding/binary"
	"testing"
	"time"
)

// gtpuPacket describes an Ethernet/IPv4/UDP/GTP-U frame as stock gtp5g
// sends it on N3: E flag, the 4-octet optional field and a DL PDU Session
// Container, then the user's IPv4 packet. That is testOverhead (58) bytes
// around user bytes.
type gtpuPacket struct {
	teid uint32
	qfi  uint8
	user int    // the user's IP packet, at least 20 bytes
	ext  bool   // an unrelated 4-octet extension header before the container
	noE  bool   // no extension header at all (no QFI)
	mf   bool   // more fragments
	off  uint16 // fragment offset in 8-octet units (not 0: no UDP, no GTP-U)
	id   uint16 // outer IP id
	port uint16 // UDP destination port (0: 2152)
	// inner, when set, is the user's IP packet (user is then ignored).
	inner []byte
}

func (g gtpuPacket) build() []byte {
	var gtp []byte
	switch {
	case g.noE:
		gtp = []byte{0x30, 0xff, 0, 0, 0, 0, 0, 0}
	case g.ext:
		gtp = []byte{0x34, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 1, 0xaa, 0xbb, 0x85, 1, 0x00, g.qfi & 0x3f, 0}
	default:
		gtp = []byte{0x34, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x85, 1, 0x00, g.qfi & 0x3f, 0}
	}
	binary.BigEndian.PutUint32(gtp[4:], g.teid)
	user := g.inner
	if user == nil {
		user = make([]byte, g.user)
		user[0] = 0x45
	}
	binary.BigEndian.PutUint16(gtp[2:], uint16(len(gtp)-8+len(user)))
	port := g.port
	if port == 0 {
		port = 2152
	}
	udp := make([]byte, 8)
	binary.BigEndian.PutUint16(udp[0:], 2152)
	binary.BigEndian.PutUint16(udp[2:], port)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(gtp)+len(user)))
	payload := append(append(udp, gtp...), user...)
	if g.off != 0 {
		payload = make([]byte, 8+len(gtp)+len(user)) // a later fragment: no headers
	}
	ip := make([]byte, 20)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(payload)))
	binary.BigEndian.PutUint16(ip[4:], g.id)
	frag := g.off & 0x1fff
	if g.mf {
		frag |= 0x2000
	}
	binary.BigEndian.PutUint16(ip[6:], frag)
	ip[8], ip[9] = 64, 17
	copy(ip[12:], []byte{10, 0, 0, 1})
	copy(ip[16:], []byte{10, 0, 0, 2})
	eth := make([]byte, 14)
	binary.BigEndian.PutUint16(eth[12:], 0x0800)
	return append(append(eth, ip...), payload...)
}

// A packet without a mark (stock gtp5g) finds its flow by the (TEID, QFI)
// of its GTP-U header and is paced exactly as a marked one: its class, its
// hash, departures one MBR slot apart, from the flow's clock.
func TestGTPUKeyPacing(t *testing.T) {
	p := loadForTest(t, testOptions())
	const mbr = 100_000
	if err := p.AddFlow(7, FlowSpec{Keys: []Key{{TEID: 100, QFI: 9}}, MBR: mbr, DelayBudget: time.Hour, Class: classNonGBR}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetDefaultClass(classDefault); err != nil {
		t.Fatal(err)
	}
	var prev uint64
	var counted []int // the program counts skb->len less the fixed 58
	before := monoNow(t)
	for i, g := range []gtpuPacket{{teid: 100, qfi: 9, user: 1000}, {teid: 100, qfi: 9, user: 496, ext: true}, {teid: 100, qfi: 9, user: 40}} {
		pkt := g.build()
		counted = append(counted, len(pkt)-testOverhead)
		verdict, out := run(t, p, 0, pkt)
		if verdict != actOK || out.priority() != classNonGBR || out.cb(0) != flowHash(7) || out.cb(1) != 7 {
			t.Fatalf("packet %d: verdict %d priority %#x hash %#x flow %d, want OK %#x %#x 7", i, verdict, out.priority(), out.cb(0), out.cb(1), classNonGBR, flowHash(7))
		}
		ts := out.tstamp()
		if i == 0 {
			if ts < before || ts > monoNow(t) {
				t.Fatalf("first departure %d not now", ts)
			}
		} else if want := prev + txNs(counted[i-1], mbr); ts != want {
			t.Fatalf("packet %d departs at +%d ns, want +%d", i, ts-prev, want-prev)
		}
		prev = ts
	}
	st, err := p.Flow(7)
	if err != nil || st.Packets != 3 || st.Bytes != 1540 {
		t.Fatalf("flow counters %+v, %v: want 3 packets, 1540 user bytes", st, err)
	}
	s, err := p.Stats()
	if err != nil || s.GTPUPackets != 3 || s.UnknownPackets != 0 {
		t.Errorf("stats %+v, %v: want 3 found by key, none unknown", s, err)
	}
}

// A mark that names a flow wins over the packet's (TEID, QFI); a mark
// that names none leaves the key to find the flow.
func TestGTPUMarkWins(t *testing.T) {
	p := loadForTest(t, testOptions())
	if err := p.AddFlow(1, FlowSpec{Keys: []Key{{TEID: 100, QFI: 9}}, MBR: 1e6, DelayBudget: time.Hour, Class: classNonGBR}); err != nil {
		t.Fatal(err)
	}
	if err := p.AddFlow(0x20, FlowSpec{Marks: []uint32{0x20}, GBR: 1e6, MBR: 2e6, DelayBudget: time.Hour, Class: classNonGBR, GBRClass: classGBR}); err != nil {
		t.Fatal(err)
	}
	pkt := gtpuPacket{teid: 100, qfi: 9, user: 100}.build()
	if _, out := run(t, p, 0x20, pkt); out.cb(1) != 0x20 || out.priority() != classGBR {
		t.Errorf("marked: flow %#x class %#x, want the mark's flow 0x20 in %#x", out.cb(1), out.priority(), classGBR)
	}
	if _, out := run(t, p, 0x33, pkt); out.cb(1) != 1 || out.priority() != classNonGBR {
		t.Errorf("unknown mark: flow %#x class %#x, want the key's flow 1", out.cb(1), out.priority())
	}
	if _, out := run(t, p, 0xff000000, pkt); out.cb(1) != 1 {
		t.Errorf("mark bits above MarkMask only: flow %#x, want the key's flow 1", out.cb(1))
	}
}

// GTP-U no flow claims goes to the default class without a departure
// time: an unknown TEID, a known TEID with another QFI, no container, not
// port 2152.
func TestGTPUUnknownKey(t *testing.T) {
	p := loadForTest(t, testOptions())
	if err := p.AddFlow(1, FlowSpec{Keys: []Key{{TEID: 100, QFI: 9}}, MBR: 1e6, DelayBudget: time.Hour, Class: classNonGBR}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetDefaultClass(classDefault); err != nil {
		t.Fatal(err)
	}
	cases := map[string]gtpuPacket{
		"unknown TEID": {teid: 101, qfi: 9, user: 100},
		"other QFI":    {teid: 100, qfi: 8, user: 100},
		"no container": {teid: 100, user: 100, noE: true},
		"other port":   {teid: 100, qfi: 9, user: 100, port: 2153},
	}
	for name, g := range cases {
		verdict, out := run(t, p, 0, g.build())
		if verdict != actOK || out.priority() != classDefault || out.tstamp() != 0 || out.cb(1) != 0 {
			t.Errorf("%s: verdict %d priority %#x tstamp %d flow %d, want the default class, no tstamp", name, verdict, out.priority(), out.tstamp(), out.cb(1))
		}
	}
	if s, err := p.Stats(); err != nil || s.UnknownPackets != uint64(len(cases)) || s.GTPUPackets != 0 {
		t.Errorf("stats %+v, %v: want %d unknown", s, err, len(cases))
	}
	if st, _ := p.Flow(1); st.Packets != 0 {
		t.Errorf("flow 1 counted %d packets", st.Packets)
	}
}

// A datagram gtp5g's encapsulation fragmented: the first fragment finds
// the flow by its key, the later ones (no UDP, no GTP-U header) follow it;
// a later fragment whose first was not seen goes to the default class.
func TestGTPUFragments(t *testing.T) {
	p := loadForTest(t, testOptions())
	if err := p.AddFlow(5, FlowSpec{Keys: []Key{{TEID: 100, QFI: 9}}, MBR: 1e6, DelayBudget: time.Hour, Class: classNonGBR}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetDefaultClass(classDefault); err != nil {
		t.Fatal(err)
	}
	if _, out := run(t, p, 0, gtpuPacket{off: 185, id: 77, user: 100}.build()); out.priority() != classDefault || out.cb(1) != 0 {
		t.Errorf("second fragment before its first: class %#x flow %d, want the default class", out.priority(), out.cb(1))
	}
	if _, out := run(t, p, 0, gtpuPacket{teid: 100, qfi: 9, mf: true, id: 77, user: 1400}.build()); out.cb(1) != 5 {
		t.Fatalf("first fragment: flow %d, want 5", out.cb(1))
	}
	if _, out := run(t, p, 0, gtpuPacket{off: 185, id: 77, user: 100}.build()); out.cb(1) != 5 || out.priority() != classNonGBR || out.tstamp() == 0 {
		t.Errorf("second fragment: class %#x flow %d tstamp %d, want flow 5, paced", out.priority(), out.cb(1), out.tstamp())
	}
	if _, out := run(t, p, 0, gtpuPacket{off: 185, id: 78, user: 100}.build()); out.cb(1) != 0 {
		t.Errorf("fragment of another datagram: flow %d, want none", out.cb(1))
	}
	if s, err := p.Stats(); err != nil || s.FragPackets != 1 || s.GTPUPackets != 1 || s.UnknownPackets != 2 {
		t.Errorf("stats %+v, %v: want 1 fragment followed, 1 by key, 2 unknown", s, err)
	}
}

// Keys are written and removed with their flow; one in use is refused,
// naming its flow; ReadFlows gives them back.
func TestGTPUKeysMaps(t *testing.T) {
	p := loadForTest(t, testOptions())
	k := Key{TEID: 100, QFI: 9}
	if err := p.AddFlow(1, FlowSpec{Keys: []Key{k, {TEID: 100, QFI: 1}}, DelayBudget: time.Hour}); err != nil {
		t.Fatal(err)
	}
	err := p.AddFlow(2, FlowSpec{Marks: []uint32{2}, Keys: []Key{{TEID: 200, QFI: 1}, k}, DelayBudget: time.Hour})
	if err == nil || err.Error() != "edt: flow 2: key teid=100 qfi=9 belongs to flow 1" {
		t.Fatalf("second flow on a used key: %v", err)
	}
	var id uint32
	if p.objs.Flows.Lookup(uint32(2), new(edtFlow)) == nil || p.objs.Marks.Lookup(uint32(2), &id) == nil || p.objs.Teids.Lookup(edtFlowKey{Teid: 200, Qfi: 1}, &id) == nil {
		t.Error("the refused flow left entries behind")
	}
	fs, err := p.ReadFlows()
	if err != nil || !SameKeys(fs[1].Spec.Keys, []Key{{TEID: 100, QFI: 1}, k}) || !fs[1].Matches(1, FlowSpec{Keys: []Key{{TEID: 100, QFI: 1}, k}, DelayBudget: time.Hour}) {
		t.Fatalf("read back %+v, %v", fs[1].Spec, err)
	}
	if fs[1].Matches(1, FlowSpec{Keys: []Key{k}, DelayBudget: time.Hour}) {
		t.Error("a spec with a key fewer matches")
	}
	if err := p.RemoveKeys(1, k, Key{TEID: 100, QFI: 1}); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveFlow(1); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(p); n != 0 {
		t.Errorf("%d keys left", n)
	}
	if err := p.AddFlows([]Flow{{ID: 3, Spec: FlowSpec{Keys: []Key{k}, DelayBudget: time.Hour}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.objs.Teids.Lookup(k.mapKey(), &id); err != nil || id != 3 {
		t.Errorf("batch: key names flow %d, %v; want 3", id, err)
	}
	for _, bad := range []Key{{TEID: 0, QFI: 1}, {TEID: 1, QFI: 64}} {
		if err := p.AddFlow(9, FlowSpec{Keys: []Key{bad}, DelayBudget: time.Hour}); err == nil {
			t.Errorf("key %s accepted", bad)
		}
	}
}

func countKeys(p *Pacer) int {
	var k edtFlowKey
	var v uint32
	n := 0
	it := p.objs.Teids.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	return n
}
