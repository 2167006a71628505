package gtpu

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/bpf"
	"github.com/free5gc/gtpqos/shaper/classify"
)

const (
	classC    = 0x00010032 // 1:50
	classPrec = 0x0001003c // 1:60
	markULA   = 0x100001
)

// innerV4 builds an inner IPv4 packet with ports and a 40-byte payload.
func innerV4(proto byte, src, dst [4]byte, sport, dport uint16) []byte {
	b := make([]byte, 20+4+40)
	b[0], b[9] = 0x45, proto
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	binary.BigEndian.PutUint16(b[20:], sport)
	binary.BigEndian.PutUint16(b[22:], dport)
	return b
}

var (
	ue1  = [4]byte{10, 60, 0, 1}
	ue2  = [4]byte{10, 60, 0, 2}
	dn   = [4]byte{10, 200, 0, 2}
	dnB  = [4]byte{10, 200, 3, 4}
	full = [4]byte{255, 255, 255, 255}

	flowA  = shaper.FlowID{SEID: 1, QERID: 3}
	flowC  = shaper.FlowID{SEID: 1, QERID: 5}
	flowP  = shaper.FlowID{SEID: 2, QERID: 7}
	flowPA = shaper.FlowID{SEID: 2, QERID: 8}
	flowUL = shaper.FlowID{SEID: 1, QERID: 13}
)

// sdfSessions: session 1 on downlink TEID 100 as free5GC shapes it (GBR
// flow A: UDP from the DN server to port 5001; non-GBR flow C: TCP from
// 10.200/16; the default path: anything to the UE), session 2 on TEID 300
// with two overlapping rules, and session 1's uplink on TEID 500.
func sdfSessions() []shaper.SessionRules {
	return []shaper.SessionRules{
		{Direction: shaper.Downlink, TEID: 100, SEID: 1, Rules: []shaper.SDFRule{
			{PDR: 4, Precedence: 128, Flow: flowA, Proto: 17, Src: dn, SrcMask: full, UE: ue1, DstPorts: []shaper.PortRange{{Lo: 5001, Hi: 5001}}},
			{PDR: 8, Precedence: 128, Flow: flowC, Proto: 6, Src: [4]byte{10, 200}, SrcMask: [4]byte{255, 255}, UE: ue1},
			{PDR: 2, Precedence: 255, Proto: 0xff, UE: ue1},
		}},
		{Direction: shaper.Downlink, TEID: 300, SEID: 2, Rules: []shaper.SDFRule{
			{PDR: 1, Precedence: 10, Flow: flowP, Proto: 17},
			{PDR: 2, Precedence: 20, Flow: flowPA, Proto: 17, DstPorts: []shaper.PortRange{{Lo: 5000, Hi: 5010}}},
		}},
		{Direction: shaper.Uplink, TEID: 500, SEID: 1, Rules: []shaper.SDFRule{
			{PDR: 7, Precedence: 128, Flow: flowUL, Proto: 6, UE: ue1},
			{PDR: 1, Precedence: 255, Proto: 0xff, UE: ue1},
		}},
	}
}

func loadSDF(t *testing.T) *Objects {
	o := loadForTest(t)
	dl := map[shaper.FlowID]classify.Entry{flowA: {ClassID: classA}, flowC: {ClassID: classC}, flowP: {ClassID: classPrec}, flowPA: {ClassID: classA}}
	want, notes := compileRules(sdfSessions(), shaper.Downlink, dl, func(e classify.Entry) uint32 { return e.ClassID })
	if len(notes) != 0 || len(want) != 2 {
		t.Fatalf("downlink rules %d, notes %v", len(want), notes)
	}
	if _, err := o.dlr.sync(want); err != nil {
		t.Fatal(err)
	}
	ul := map[shaper.FlowID]classify.Entry{flowUL: {Mark: markULA}}
	want, _ = compileRules(sdfSessions(), shaper.Uplink, ul, func(e classify.Entry) uint32 { return e.Mark })
	if _, err := o.ulr.sync(want); err != nil {
		t.Fatal(err)
	}
	// (TEID, QFI) entries for packets no rule matches.
	if _, err := o.SyncDownlink(map[Key]uint32{{100, 2}: classA}); err != nil {
		t.Fatal(err)
	}
	if err := o.SetDefaultClass(classDefault); err != nil {
		t.Fatal(err)
	}
	return o
}

// gtp builds a downlink G-PDU on teid with the wire QFI and inner packet.
func gtp(teid uint32, qfi byte, inner []byte) pkt {
	return pkt{teid: teid, exts: []extHdr{pdu(qfi)}, inner: inner}
}

func TestDownlinkSDF(t *testing.T) {
	o := loadSDF(t)
	ipv6 := make([]byte, 60)
	ipv6[0] = 0x60
	cases := []struct {
		name    string
		p       pkt
		verdict uint32
		prio    uint32
	}{
		{"flow A by its SDF, wire QFI 1", gtp(100, 1, innerV4(17, dn, ue1, 4000, 5001)), actOK, classA},
		{"flow C by its SDF, wire QFI 1 (the AMBR QER's)", gtp(100, 1, innerV4(6, dnB, ue1, 80, 40000)), actOK, classC},
		{"flow C's SDF whatever the QFI", gtp(100, 4, innerV4(6, dnB, ue1, 80, 40000)), actOK, classC},
		{"default path's SDF: default class", gtp(100, 1, innerV4(17, dn, ue1, 4000, 5002)), actOK, classDefault},
		{"no rule (another UE): (TEID, QFI) decides", gtp(100, 2, innerV4(17, dn, ue2, 4000, 5001)), actOK, classA},
		{"no rule, no (TEID, QFI): default class", gtp(100, 1, innerV4(17, dn, ue2, 4000, 5001)), actOK, classDefault},
		{"precedence: the first matching rule wins", gtp(300, 1, innerV4(17, dn, ue1, 4000, 5001)), actOK, classPrec},
		{"inner IPv6: (TEID, QFI) decides", gtp(100, 2, ipv6), actOK, classA},
		{"unknown TEID: default class", gtp(999, 1, innerV4(6, dnB, ue1, 80, 40000)), actOK, classDefault},
		{"S only (no container): rules still match", pkt{teid: 100, s: true, inner: innerV4(6, dnB, ue1, 80, 40000)}, actOK, classC},
		{"truncated inner header: default", pkt{teid: 100, exts: []extHdr{pdu(1)}, inner: innerV4(6, dnB, ue1, 80, 40000)[:12]}, actOK, classDefault},
	}
	for _, c := range cases {
		ret, out := run(t, o.DownlinkProgram(), c.p.build(), newCtx(presetMark, presetPrio), 1)
		if ret != c.verdict || out.priority() != c.prio || out.mark() != presetMark {
			t.Errorf("%s: verdict %#x priority %#x mark %#x, want %#x %#x %#x", c.name, ret, out.priority(), out.mark(), c.verdict, c.prio, presetMark)
		}
	}
	st, err := o.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Downlink.SDFHit != 6 {
		t.Errorf("SDF hits %d, want 6", st.Downlink.SDFHit)
	}
}

// Non-first fragments carry no GTP-U header: they take their first
// fragment's class (found by outer source, destination, IP id and
// protocol), and one whose first was not seen is left alone.
func TestDownlinkFragments(t *testing.T) {
	o := loadSDF(t)
	first := gtp(100, 1, innerV4(6, dnB, ue1, 80, 40000))
	first.mf, first.ipID = true, 77
	later := pkt{fragOff: 185, ipID: 77, raw: make([]byte, 20)}
	dflt := gtp(100, 1, innerV4(17, dn, ue1, 4000, 5002))
	dflt.mf, dflt.ipID = true, 78
	steps := []struct {
		name    string
		p       pkt
		verdict uint32
		prio    uint32
	}{
		{"second fragment before its first: left alone", later, actUnspec, presetPrio},
		{"first fragment of flow C", first, actOK, classC},
		{"second fragment follows it", later, actOK, classC},
		{"last fragment too", pkt{fragOff: 370, ipID: 77, raw: make([]byte, 8)}, actOK, classC},
		{"first fragment to the default class", dflt, actOK, classDefault},
		{"its second fragment too", pkt{fragOff: 185, ipID: 78, raw: make([]byte, 20)}, actOK, classDefault},
		{"another id: left alone", pkt{fragOff: 185, ipID: 79, raw: make([]byte, 20)}, actUnspec, presetPrio},
	}
	for _, s := range steps {
		ret, out := run(t, o.DownlinkProgram(), s.p.build(), newCtx(presetMark, presetPrio), 1)
		if ret != s.verdict || out.priority() != s.prio {
			t.Errorf("%s: verdict %#x priority %#x, want %#x %#x", s.name, ret, out.priority(), s.verdict, s.prio)
		}
	}
	// The same datagram id coming in on N3 is another datagram: ingress
	// does not take egress's entry.
	if ret, out := run(t, o.UplinkProgram(), later.build(), newCtx(presetMark, presetPrio), 1); ret != actUnspec || out.mark() != presetMark {
		t.Errorf("ingress took egress's fragment entry: verdict %#x mark %#x", ret, out.mark())
	}
	st, _ := o.Stats()
	if st.Downlink.FragHit != 3 || st.Downlink.FragMiss != 2 {
		t.Errorf("fragment hits %d misses %d, want 3 and 2", st.Downlink.FragHit, st.Downlink.FragMiss)
	}
}

func TestUplinkSDF(t *testing.T) {
	o := loadSDF(t)
	tcp := pkt{teid: 500, exts: []extHdr{pduUL(1)}, inner: innerV4(6, ue1, dn, 40000, 80), mf: true, ipID: 5}
	steps := []struct {
		name string
		p    pkt
		mark uint32
	}{
		{"TCP from the UE: flow's mark", tcp, markULA},
		{"its second fragment: the same mark", pkt{fragOff: 185, ipID: 5, raw: make([]byte, 20)}, markULA},
		{"UDP from the UE: default path, unmarked", pkt{teid: 500, exts: []extHdr{pduUL(1)}, inner: innerV4(17, ue1, dn, 4000, 53)}, presetMark},
		{"another UE's source: no rule, no (TEID, QFI): unmarked", pkt{teid: 500, exts: []extHdr{pduUL(1)}, inner: innerV4(6, ue2, dn, 40000, 80)}, presetMark},
	}
	for _, s := range steps {
		ret, out := run(t, o.UplinkProgram(), s.p.build(), newCtx(presetMark, presetPrio), 1)
		if ret != actOK || out.mark() != s.mark || out.priority() != presetPrio {
			t.Errorf("%s: verdict %#x mark %#x priority %#x, want OK %#x %#x", s.name, ret, out.mark(), out.priority(), s.mark, presetPrio)
		}
	}
}

// compileRules gives each rule its flow's value, 0 for a flow without an
// entry, and notes what it leaves to (TEID, QFI).
func TestCompileRules(t *testing.T) {
	ents := map[shaper.FlowID]classify.Entry{flowA: {ClassID: classA}}
	rs := sdfSessions()
	rs = append(rs, shaper.SessionRules{Direction: shaper.Downlink, TEID: 100, SEID: 9, Rules: rs[0].Rules[:1]})
	var many []shaper.SDFRule
	for range shaper.MaxSDFRules + 1 {
		many = append(many, shaper.SDFRule{Proto: 17})
	}
	rs = append(rs, shaper.SessionRules{Direction: shaper.Downlink, TEID: 400, SEID: 4, Rules: many})
	got, notes := compileRules(rs, shaper.Downlink, ents, func(e classify.Entry) uint32 { return e.ClassID })
	if len(got) != 2 {
		t.Fatalf("%d TEIDs compiled, want 2 (100 and 300)", len(got))
	}
	r := got[100]
	if r.N != 3 || r.R[0].Value != classA || r.R[1].Value != 0 || r.R[2].Value != 0 || r.R[0].Proto != 17 || r.R[0].Ndport != 1 || r.R[0].Dport[0].Lo != 5001 {
		t.Fatalf("TEID 100: %+v", r)
	}
	if binary.NativeEndian.Uint32(dn[:]) != r.R[0].Src || r.R[0].Smask != 0xffffffff || r.R[0].UeIsSrc != 0 {
		t.Fatalf("TEID 100 rule 0 addresses: %+v", r.R[0])
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "downlink TEID 100: sessions 1 and 9 both list it; session 1's SDF rules are used") ||
		!strings.Contains(all, "downlink TEID 400 (session 4): 17 SDF rules, the classifier matches at most 16; classified by (TEID, QFI)") {
		t.Fatalf("notes:\n%s", all)
	}
	ul, _ := compileRules(rs, shaper.Uplink, nil, func(e classify.Entry) uint32 { return e.Mark })
	if u := ul[500]; u.N != 2 || u.R[0].UeIsSrc != 1 {
		t.Fatalf("uplink rules %+v", u)
	}
}

// The program reads every rule slot, every port range slot and up to 8
// extension headers: the last of each must classify as the first does.
func TestSDFLimits(t *testing.T) {
	o := loadForTest(t)
	class := func(k int) uint32 { return 0x00010100 + uint32(k) }
	var slots []shaper.SDFRule
	ents := map[shaper.FlowID]classify.Entry{}
	for k := range shaper.MaxSDFRules {
		f := shaper.FlowID{SEID: 3, QERID: uint32(k + 1)}
		ents[f] = classify.Entry{ClassID: class(k)}
		p := uint16(6000 + k)
		slots = append(slots, shaper.SDFRule{PDR: uint16(k + 1), Flow: f, Proto: 17, DstPorts: []shaper.PortRange{{Lo: p, Hi: p}}})
	}
	fRanges, fDst := shaper.FlowID{SEID: 4, QERID: 1}, shaper.FlowID{SEID: 4, QERID: 2}
	ents[fRanges], ents[fDst] = classify.Entry{ClassID: classA}, classify.Entry{ClassID: classB}
	ranges := []shaper.SDFRule{
		{PDR: 1, Flow: fRanges, Proto: 17,
			SrcPorts: []shaper.PortRange{{Lo: 1, Hi: 1}, {Lo: 10, Hi: 19}, {Lo: 100, Hi: 199}, {Lo: 1000, Hi: 1999}},
			DstPorts: []shaper.PortRange{{Lo: 5, Hi: 5}, {Lo: 50, Hi: 59}, {Lo: 500, Hi: 599}, {Lo: 5000, Hi: 5999}}},
		{PDR: 2, Flow: fDst, Proto: 0xff, DstPorts: []shaper.PortRange{{Lo: 7, Hi: 7}, {Lo: 70, Hi: 79}, {Lo: 700, Hi: 799}}},
	}
	sessions := []shaper.SessionRules{
		{Direction: shaper.Downlink, TEID: 600, SEID: 3, Rules: slots},
		{Direction: shaper.Downlink, TEID: 601, SEID: 4, Rules: ranges},
	}
	want, notes := compileRules(sessions, shaper.Downlink, ents, func(e classify.Entry) uint32 { return e.ClassID })
	if len(notes) != 0 || len(want) != 2 {
		t.Fatalf("rules %d, notes %v", len(want), notes)
	}
	if _, err := o.dlr.sync(want); err != nil {
		t.Fatal(err)
	}
	if err := o.SetDefaultClass(classDefault); err != nil {
		t.Fatal(err)
	}
	type step struct {
		name string
		p    pkt
		prio uint32
	}
	var steps []step
	for k := range shaper.MaxSDFRules {
		steps = append(steps, step{fmt.Sprintf("rule slot %d", k), gtp(600, 1, innerV4(17, dn, ue1, 4000, uint16(6000+k))), class(k)})
	}
	unrelated := extHdr{typ: 0x40, content: []byte{0, 1}}
	chain := func(n int, inner []byte) pkt {
		p := pkt{teid: 600, inner: inner}
		for range n - 1 {
			p.exts = append(p.exts, unrelated)
		}
		p.exts = append(p.exts, pdu(1))
		return p
	}
	steps = append(steps,
		step{"no rule's port", gtp(600, 1, innerV4(17, dn, ue1, 4000, 7000)), classDefault},
		step{"8 extension headers: the rules see the inner packet", chain(8, innerV4(17, dn, ue1, 4000, 6015)), class(15)},
		step{"9 extension headers: past the walk, default", chain(9, innerV4(17, dn, ue1, 4000, 6015)), classDefault},
		step{"first port ranges", gtp(601, 1, innerV4(17, dn, ue1, 1, 5)), classA},
		step{"second port ranges", gtp(601, 1, innerV4(17, dn, ue1, 15, 55)), classA},
		step{"last port ranges, at their ends", gtp(601, 1, innerV4(17, dn, ue1, 1999, 5000)), classA},
		step{"last port ranges, other ends", gtp(601, 1, innerV4(17, dn, ue1, 1000, 5999)), classA},
		step{"source port in no range", gtp(601, 1, innerV4(17, dn, ue1, 20, 5500)), classDefault},
		step{"destination port past the last range", gtp(601, 1, innerV4(17, dn, ue1, 1500, 6000)), classDefault},
		step{"third of three ranges (TCP, any protocol)", gtp(601, 1, innerV4(6, dn, ue1, 1, 750)), classB},
		step{"between the ranges", gtp(601, 1, innerV4(6, dn, ue1, 1, 80)), classDefault},
	)
	for _, s := range steps {
		ret, out := run(t, o.DownlinkProgram(), s.p.build(), newCtx(presetMark, presetPrio), 1)
		if ret != actOK || out.priority() != s.prio {
			t.Errorf("%s: verdict %#x priority %#x, want OK %#x", s.name, ret, out.priority(), s.prio)
		}
	}
}

// The shared Go layout of a TEID's rules (package shaper/bpf) is the one
// the program's BTF gives its rule maps.
func TestSharedRuleLayout(t *testing.T) {
	spec, err := loadGtpu()
	if err != nil {
		t.Fatal(err)
	}
	want := binary.Size(bpf.SDFRules{})
	for _, m := range []string{gtpuMapDlRules, gtpuMapUlRules} {
		if got := int(spec.Maps[m].ValueSize); got != want {
			t.Errorf("map %s: value %d bytes, bpf.SDFRules %d", m, got, want)
		}
	}
	if got := int(unsafe.Sizeof(gtpuSdfRules{})); got != want {
		t.Errorf("generated sdf_rules %d bytes, bpf.SDFRules %d", got, want)
	}
}
