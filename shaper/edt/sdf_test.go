package edt

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/bpf"
)

// innerIPv4 is a user's IPv4 packet of n bytes (at least 24): protocol
// proto from src:sport to dst:dport.
func innerIPv4(n int, proto byte, src, dst [4]byte, sport, dport uint16) []byte {
	b := make([]byte, n)
	b[0], b[9] = 0x45, proto
	binary.BigEndian.PutUint16(b[2:], uint16(n))
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	binary.BigEndian.PutUint16(b[20:], sport)
	binary.BigEndian.PutUint16(b[22:], dport)
	return b
}

var (
	sdfUE = [4]byte{10, 60, 0, 1}
	sdfDN = [4]byte{192, 168, 100, 4}
	host  = [4]byte{255, 255, 255, 255}
)

// sdfFlow is a rule of flow qer (SEID 1) for packets from src/mask.
func sdfFlow(qer uint32, src, mask [4]byte) shaper.SDFRule {
	return shaper.SDFRule{Flow: shaper.FlowID{SEID: 1, QERID: qer}, Proto: 0xff, Src: src, SrcMask: mask, UE: sdfUE}
}

// sdfRules compiles one TEID's rules with flow ids from ids (by QER id).
func sdfRules(t *testing.T, ids map[uint32]uint32, rs ...shaper.SDFRule) Rules {
	t.Helper()
	r, err := bpf.Layout(rs, shaper.Downlink, func(id shaper.FlowID) uint32 { return ids[id.QERID] })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sdfPacer holds free5GC's session on stock gtp5g: the default flow (id
// 10, MBR 5 kbit/s) and two non-GBR flows C (11, MBR 20 kbit/s) and E (12,
// MBR 10 kbit/s), all under one AMBR, keyed by their QERs' QFIs (1, 4, 5);
// gtp5g sends all three with QFI 1. The rates are low so that each flow's
// clock stays ahead of now across the test's packets (320-400 ms a packet)
// even in a slow guest.
func sdfPacer(t *testing.T) *Pacer {
	t.Helper()
	p := loadForTest(t, testOptions())
	if err := p.AddSession(1, 1e9); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		id  uint32
		qfi uint8
		mbr uint64
	}{{10, 1, 5e3}, {11, 4, 2e4}, {12, 5, 1e4}} {
		if err := p.AddFlow(f.id, FlowSpec{Keys: []Key{{TEID: 100, QFI: f.qfi}}, Session: 1, MBR: f.mbr, DelayBudget: time.Hour, Class: classNonGBR}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.SetDefaultClass(classDefault); err != nil {
		t.Fatal(err)
	}
	return p
}

// Two flows of one session that share (TEID, QFI 1) on the wire are told
// apart by their PDRs' SDF filters: each packet finds its own flow and
// departs one slot of that flow's MBR after the flow's previous one.
func TestSDFFlowsApart(t *testing.T) {
	p := sdfPacer(t)
	ids := map[uint32]uint32{3: 11, 4: 12, 2: 10}
	e := sdfFlow(4, [4]byte{192, 168, 100, 5}, host)
	e.Proto, e.DstPorts = 17, []shaper.PortRange{{Lo: 9000, Hi: 9001}}
	all := sdfFlow(2, [4]byte{}, [4]byte{}) // the default PDR: any packet to the UE
	if err := p.SetRules(100, sdfRules(t, ids, sdfFlow(3, sdfDN, host), e, all)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		pkt  []byte
		flow uint32
	}{
		{"C", innerIPv4(1000, 17, sdfDN, sdfUE, 5000, 9000), 11},
		{"E", innerIPv4(500, 17, [4]byte{192, 168, 100, 5}, sdfUE, 5000, 9000), 12},
		{"C again", innerIPv4(1000, 6, sdfDN, sdfUE, 5000, 80), 11},
		{"E again", innerIPv4(500, 17, [4]byte{192, 168, 100, 5}, sdfUE, 5000, 9001), 12},
		{"E's host, another port", innerIPv4(200, 17, [4]byte{192, 168, 100, 5}, sdfUE, 5000, 9002), 10},
		{"E's host, TCP", innerIPv4(200, 6, [4]byte{192, 168, 100, 5}, sdfUE, 5000, 9000), 10},
		{"another host", innerIPv4(200, 17, [4]byte{10, 200, 0, 9}, sdfUE, 5000, 9000), 10},
	}
	last := map[uint32]uint64{}
	lastLen := map[uint32]int{}
	mbr := map[uint32]uint64{10: 5e3, 11: 2e4, 12: 1e4}
	for _, c := range cases {
		verdict, out := run(t, p, 0, gtpuPacket{teid: 100, qfi: 1, inner: c.pkt}.build())
		if verdict != actOK || out.cb(1) != c.flow || out.priority() != classNonGBR || out.cb(0) != flowHash(c.flow) {
			t.Fatalf("%s: verdict %d flow %d class %#x hash %#x, want flow %d in %#x", c.name, verdict, out.cb(1), out.priority(), out.cb(0), c.flow, classNonGBR)
		}
		if prev, ok := last[c.flow]; ok {
			// Its own MBR's spacing, less at most the session clock's lead
			// over now when the previous one was paced (clocks are charged
			// at now: the 1 Gbit/s AMBR's time of the few packets before).
			want := prev + txNs(lastLen[c.flow], mbr[c.flow])
			if ts := out.tstamp(); ts > want || want-ts > 10_000 {
				t.Errorf("%s: departs %d ns after the flow's last, want %d (its own MBR) less at most 10 µs", c.name, ts-prev, want-prev)
			}
		}
		last[c.flow], lastLen[c.flow] = out.tstamp(), len(c.pkt)
	}
	for id, n := range map[uint32]uint64{10: 3, 11: 2, 12: 2} {
		if st, err := p.Flow(id); err != nil || st.Packets != n {
			t.Errorf("flow %d: %+v, %v; want %d packets", id, st, err, n)
		}
	}
	if s, err := p.Stats(); err != nil || s.SDFPackets != 7 || s.GTPUPackets != 7 || s.UnknownPackets != 0 {
		t.Errorf("stats %+v, %v: want 7 found by SDF rule, none unknown", s, err)
	}
}

// The rules are tried in their order (gtp5g's precedence): the first that
// matches decides, even where a later one is narrower; a rule of no flow
// sends the packet to the default class, not to its (TEID, QFI) flow.
func TestSDFPrecedence(t *testing.T) {
	p := sdfPacer(t)
	wide := sdfFlow(4, [4]byte{192, 168, 100, 0}, [4]byte{255, 255, 255, 0})
	none := sdfFlow(9, [4]byte{10, 200, 0, 9}, host) // a PDR whose flow has no entry
	ids := map[uint32]uint32{3: 11, 4: 12}
	if err := p.SetRules(100, sdfRules(t, ids, wide, sdfFlow(3, sdfDN, host), none)); err != nil {
		t.Fatal(err)
	}
	if _, out := run(t, p, 0, gtpuPacket{teid: 100, qfi: 1, inner: innerIPv4(100, 17, sdfDN, sdfUE, 1, 2)}.build()); out.cb(1) != 12 {
		t.Errorf("C's host under the earlier /24 rule: flow %d, want the /24's 12", out.cb(1))
	}
	if err := p.SetRules(100, sdfRules(t, ids, sdfFlow(3, sdfDN, host), wide, none)); err != nil {
		t.Fatal(err)
	}
	if _, out := run(t, p, 0, gtpuPacket{teid: 100, qfi: 1, inner: innerIPv4(100, 17, sdfDN, sdfUE, 1, 2)}.build()); out.cb(1) != 11 {
		t.Errorf("C's rule first: flow %d, want 11", out.cb(1))
	}
	_, out := run(t, p, 0, gtpuPacket{teid: 100, qfi: 1, inner: innerIPv4(100, 17, [4]byte{10, 200, 0, 9}, sdfUE, 1, 2)}.build())
	if out.cb(1) != 0 || out.priority() != classDefault || out.tstamp() != 0 {
		t.Errorf("a rule of no flow: flow %d class %#x tstamp %d, want the default class, unpaced", out.cb(1), out.priority(), out.tstamp())
	}
	// Another UE address: the rules' UE does not match.
	if _, out := run(t, p, 0, gtpuPacket{teid: 100, qfi: 1, inner: innerIPv4(100, 17, sdfDN, [4]byte{10, 60, 0, 2}, 1, 2)}.build()); out.cb(1) != 10 {
		t.Errorf("another UE: flow %d, want the (TEID, QFI 1) flow 10", out.cb(1))
	}
}

// A packet no rule matches falls to its (TEID, QFI): QFI 1 to the default
// flow, a QFI no key names to the default class; a TEID without rules is
// found by (TEID, QFI) alone; a first fragment an SDF rule found leaves
// its flow to the later fragments.
func TestSDFFallsToKey(t *testing.T) {
	p := sdfPacer(t)
	if err := p.SetRules(100, sdfRules(t, map[uint32]uint32{3: 11}, sdfFlow(3, sdfDN, host))); err != nil {
		t.Fatal(err)
	}
	other := innerIPv4(100, 17, [4]byte{10, 200, 0, 9}, sdfUE, 1, 2)
	for _, c := range []struct {
		name string
		g    gtpuPacket
		flow uint32
	}{
		{"no rule, QFI 1", gtpuPacket{teid: 100, qfi: 1, inner: other}, 10},
		{"no rule, QFI 5", gtpuPacket{teid: 100, qfi: 5, inner: other}, 12},
		{"no rule, QFI 9", gtpuPacket{teid: 100, qfi: 9, inner: other}, 0},
		{"C's rule, QFI 9", gtpuPacket{teid: 100, qfi: 9, inner: innerIPv4(100, 17, sdfDN, sdfUE, 1, 2)}, 11},
		{"C's rule, no container", gtpuPacket{teid: 100, noE: true, inner: innerIPv4(100, 17, sdfDN, sdfUE, 1, 2)}, 11},
		{"first fragment", gtpuPacket{teid: 100, qfi: 1, mf: true, id: 9, inner: innerIPv4(1400, 17, sdfDN, sdfUE, 1, 2)}, 11},
		{"later fragment", gtpuPacket{off: 185, id: 9, user: 100}, 11},
	} {
		if _, out := run(t, p, 0, c.g.build()); out.cb(1) != c.flow {
			t.Errorf("%s: flow %d, want %d", c.name, out.cb(1), c.flow)
		}
	}
	if err := p.RemoveRules(100); err != nil {
		t.Fatal(err)
	}
	if _, out := run(t, p, 0, gtpuPacket{teid: 100, qfi: 1, inner: innerIPv4(100, 17, sdfDN, sdfUE, 1, 2)}.build()); out.cb(1) != 10 {
		t.Errorf("rules removed: C's packet in flow %d, want the (TEID, QFI 1) flow 10", out.cb(1))
	}
	if rs, err := p.ReadRules(); err != nil || len(rs) != 0 {
		t.Errorf("rules left: %v, %v", rs, err)
	}
}

// BenchmarkRunSDF measures an unmarked GTP-U packet's cost per packet
// (BPF_PROG_TEST_RUN, the kernel's mean): found by (TEID, QFI) on a TEID
// without rules, by the first of its TEID's 16 SDF rules, by the last,
// and by (TEID, QFI) after none of the 16 matched.
//
//	go test -run '^$' -bench RunSDF -benchtime 20x ./shaper/edt/
func BenchmarkRunSDF(b *testing.B) {
	o := testOptions()
	o.echo = false
	p := loadForTest(b, o)
	for id, k := range map[uint32]Key{1: {TEID: 100, QFI: 1}, 2: {TEID: 200, QFI: 1}, 3: {TEID: 100, QFI: 4}} {
		if err := p.AddFlow(id, FlowSpec{Keys: []Key{k}, MBR: 100e9, DelayBudget: time.Hour, Class: classNonGBR}); err != nil {
			b.Fatal(err)
		}
	}
	var rs []shaper.SDFRule
	for i := range shaper.MaxSDFRules {
		r := sdfFlow(3, [4]byte{192, 168, 100, byte(10 + i)}, host)
		r.Proto, r.DstPorts = 17, []shaper.PortRange{{Lo: 9000, Hi: 9000}, {Lo: 9100, Hi: 9200}}
		rs = append(rs, r)
	}
	r, err := bpf.Layout(rs, shaper.Downlink, func(shaper.FlowID) uint32 { return 3 })
	if err != nil {
		b.Fatal(err)
	}
	if err := p.SetRules(100, r); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		g    gtpuPacket
	}{
		{"key-no-rules", gtpuPacket{teid: 200, qfi: 1, inner: innerIPv4(1000, 17, [4]byte{192, 168, 100, 10}, sdfUE, 1, 9000)}},
		{"sdf-first-of-16", gtpuPacket{teid: 100, qfi: 1, inner: innerIPv4(1000, 17, [4]byte{192, 168, 100, 10}, sdfUE, 1, 9000)}},
		{"sdf-last-of-16", gtpuPacket{teid: 100, qfi: 1, inner: innerIPv4(1000, 17, [4]byte{192, 168, 100, 25}, sdfUE, 1, 9150)}},
		{"none-of-16-then-key", gtpuPacket{teid: 100, qfi: 1, inner: innerIPv4(1000, 17, [4]byte{10, 200, 0, 9}, sdfUE, 1, 9000)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const repeat = 200_000
			data, in := tc.g.build(), newCtx(0, 0)
			var total time.Duration
			for range b.N {
				ret, d, err := kernelTimed(p, data, in, repeat)
				if err != nil || ret != actOK {
					b.Fatalf("verdict %d, %v", ret, err)
				}
				total += d
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}
