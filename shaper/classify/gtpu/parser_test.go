package gtpu

import (
	"testing"

	"github.com/free5gc/gtpqos/tests/testenv"
)

const (
	classA       = 0x0001000a // 1:10
	classB       = 0x00010014 // 1:20
	classQFIOnly = 0x0001001e // 1:30
	classDefault = 0x00010028 // 1:40
	presetPrio   = 0x00077777 // priority before the program runs
	presetMark   = 0x00000abc // mark before the program runs
)

// Parser cases, fed through the real downlink and uplink programs.
// Map: (100, 5) -> A, (200, 9) -> B, (0, 7) -> QFI-only; default class set.
var parserCases = []struct {
	name    string
	p       pkt
	verdict uint32
	prio    uint32 // expected skb->priority after gtpu_egress
	mark    uint32 // expected skb->mark after gtpu_ingress
}{
	{"E only, PDU container", pkt{teid: 100, exts: []extHdr{pdu(5)}}, actOK, classA, 0x105},
	{"E+S", pkt{teid: 100, s: true, exts: []extHdr{pdu(5)}}, actOK, classA, 0x105},
	{"E+PN", pkt{teid: 100, pn: true, exts: []extHdr{pdu(5)}}, actOK, classA, 0x105},
	{"E+S+PN", pkt{teid: 100, s: true, pn: true, exts: []extHdr{pdu(5)}}, actOK, classA, 0x105},
	{"S only: no extension, default", pkt{teid: 100, s: true}, actOK, classDefault, presetMark},
	{"PN only: no extension, default", pkt{teid: 100, pn: true}, actOK, classDefault, presetMark},
	{"no flags: default", pkt{teid: 100}, actOK, classDefault, presetMark},
	{"unrelated extension before container", pkt{teid: 200, exts: []extHdr{{typ: 0x40, content: []byte{0x08, 0x68}}, pdu(9)}}, actOK, classB, 0x209},
	{"two unrelated extensions (8 and 4 octets) before container", pkt{teid: 200, s: true, exts: []extHdr{{typ: 0x81, content: []byte{1, 2, 3, 4, 5, 6}}, {typ: 0x40, content: []byte{0, 1}}, pdu(9)}}, actOK, classB, 0x209},
	{"UL PDU container (type 1)", pkt{teid: 200, exts: []extHdr{pduUL(9)}}, actOK, classB, 0x209},
	{"extension chain without container: default", pkt{teid: 100, exts: []extHdr{{typ: 0x40, content: []byte{0, 1}}}}, actOK, classDefault, presetMark},
	{"extension length 0: default", pkt{teid: 100, exts: []extHdr{{typ: 0x85, content: []byte{0, 5}, rawLen: 0x100}}}, actOK, classDefault, presetMark},
	{"extension chain longer than 8: default", pkt{teid: 100, exts: []extHdr{
		{typ: 0x40, content: []byte{0, 1}}, {typ: 0x40, content: []byte{0, 1}}, {typ: 0x40, content: []byte{0, 1}},
		{typ: 0x40, content: []byte{0, 1}}, {typ: 0x40, content: []byte{0, 1}}, {typ: 0x40, content: []byte{0, 1}},
		{typ: 0x40, content: []byte{0, 1}}, {typ: 0x40, content: []byte{0, 1}}, pdu(5)}}, actOK, classDefault, presetMark},
	{"IPv4 options (IHL 6)", pkt{teid: 100, ipOptions: []byte{0x01, 0x01, 0x01, 0x00}, exts: []extHdr{pdu(5)}}, actOK, classA, 0x105},
	{"IPv4 options (IHL 15)", pkt{teid: 200, ipOptions: make([]byte, 40), exts: []extHdr{pdu(9)}}, actOK, classB, 0x209},
	{"unknown TEID: default", pkt{teid: 999, exts: []extHdr{pdu(5)}}, actOK, classDefault, presetMark},
	{"known TEID, other QFI: default", pkt{teid: 100, exts: []extHdr{pdu(6)}}, actOK, classDefault, presetMark},
	{"unknown TEID, QFI-only entry", pkt{teid: 999, exts: []extHdr{pdu(7)}}, actOK, classQFIOnly, 0x7},
	{"echo request (not G-PDU): default", pkt{teid: 0, msgType: 1, s: true}, actOK, classDefault, presetMark},
	{"truncated in container: default", pkt{teid: 100, exts: []extHdr{pdu(5)}, truncate: 14 + 20 + 8 + 12 + 1}, actOK, classDefault, presetMark},
	{"truncated in optional field: default", pkt{teid: 100, exts: []extHdr{pdu(5)}, truncate: 14 + 20 + 8 + 10}, actOK, classDefault, presetMark},
	{"truncated in GTP-U header: untouched", pkt{teid: 100, exts: []extHdr{pdu(5)}, truncate: 14 + 20 + 8 + 5}, actUnspec, presetPrio, presetMark},
	{"truncated in UDP header: untouched", pkt{teid: 100, exts: []extHdr{pdu(5)}, truncate: 14 + 20 + 6}, actUnspec, presetPrio, presetMark},
	{"non-GTP UDP on 2152 (version 0): untouched", pkt{raw: []byte{0x00, 0xff, 0, 8, 0, 0, 0, 100, 0x85, 0, 5, 0, 1, 2, 3, 4}}, actUnspec, presetPrio, presetMark},
	{"GTP' (PT 0) on 2152: untouched", pkt{gtpFlags: 0x20, teid: 100, exts: []extHdr{pdu(5)}}, actUnspec, presetPrio, presetMark},
	{"GTPv2 on 2152: untouched", pkt{gtpFlags: 0x40, teid: 100}, actUnspec, presetPrio, presetMark},
	{"UDP to another port: untouched", pkt{dport: 2123, teid: 100, exts: []extHdr{pdu(5)}}, actUnspec, presetPrio, presetMark},
	{"TCP: untouched", pkt{ipProto: 6, teid: 100, exts: []extHdr{pdu(5)}}, actUnspec, presetPrio, presetMark},
	{"non-first fragment: untouched", pkt{fragOff: 185, teid: 100, exts: []extHdr{pdu(5)}}, actUnspec, presetPrio, presetMark},
}

// loadParserMaps loads the objects with the parser cases' map entries.
func loadParserMaps(t testing.TB) *Objects {
	t.Helper()
	o := loadForTest(t)
	fillParserMaps(t, o)
	return o
}

// fuzzObjects is loaded once per fuzz process (loading per input would
// dominate the run); it is never closed before the process exits.
var fuzzObjects *Objects

func loadParserMapsOnce(t testing.TB) *Objects {
	t.Helper()
	if fuzzObjects == nil {
		testenv.RequireRoot(t)
		o, err := Load(LoadOptions{})
		if err != nil {
			t.Skipf("kernel refuses to load BPF programs: %v", err)
		}
		fillParserMaps(t, o)
		fuzzObjects = o
	}
	return fuzzObjects
}

func fillParserMaps(t testing.TB, o *Objects) {
	t.Helper()
	if _, err := o.SyncDownlink(map[Key]uint32{{100, 5}: classA, {200, 9}: classB, {0, 7}: classQFIOnly}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.SyncUplink(map[Key]uint32{{100, 5}: 0x105, {200, 9}: 0x209, {0, 7}: 0x7}); err != nil {
		t.Fatal(err)
	}
	if err := o.SetDefaultClass(classDefault); err != nil {
		t.Fatal(err)
	}
}

func TestDownlinkParser(t *testing.T) {
	o := loadParserMaps(t)
	for _, tc := range parserCases {
		t.Run(tc.name, func(t *testing.T) {
			verdict, out := run(t, o.DownlinkProgram(), tc.p.build(), newCtx(presetMark, presetPrio), 1)
			if verdict != tc.verdict {
				t.Errorf("verdict = %#x, want %#x", verdict, tc.verdict)
			}
			if got := out.priority(); got != tc.prio {
				t.Errorf("skb->priority = %#x, want %#x", got, tc.prio)
			}
			if got := out.mark(); got != presetMark {
				t.Errorf("skb->mark = %#x, want it untouched (%#x)", got, presetMark)
			}
		})
	}
}

func TestUplinkParser(t *testing.T) {
	o := loadParserMaps(t)
	for _, tc := range parserCases {
		t.Run(tc.name, func(t *testing.T) {
			verdict, out := run(t, o.UplinkProgram(), tc.p.build(), newCtx(presetMark, presetPrio), 1)
			if verdict != tc.verdict {
				t.Errorf("verdict = %#x, want %#x", verdict, tc.verdict)
			}
			if got := out.mark(); got != tc.mark {
				t.Errorf("skb->mark = %#x, want %#x", got, tc.mark)
			}
			if got := out.priority(); got != presetPrio {
				t.Errorf("skb->priority = %#x, want it untouched (%#x)", got, presetPrio)
			}
		})
	}
}

// With no default class configured, unclaimed GTP-U keeps its priority.
func TestDownlinkNoDefaultClass(t *testing.T) {
	o := loadForTest(t)
	verdict, out := run(t, o.DownlinkProgram(), pkt{teid: 1, exts: []extHdr{pdu(1)}}.build(), newCtx(0, presetPrio), 1)
	if verdict != actOK || out.priority() != presetPrio {
		t.Errorf("verdict %#x priority %#x, want %#x and %#x", verdict, out.priority(), actOK, presetPrio)
	}
}

func TestMarkProgram(t *testing.T) {
	o := loadForTest(t)
	if _, err := o.SyncMarkClasses(map[uint32]uint32{0x105: classA}); err != nil {
		t.Fatal(err)
	}
	data := pkt{ipProto: 6}.build()
	for _, tc := range []struct {
		name          string
		mark          uint32
		verdict, prio uint32
	}{
		{"known mark", 0x105, actOK, classA},
		{"unknown mark", 0x106, actUnspec, presetPrio},
		{"no mark", 0, actUnspec, presetPrio},
	} {
		verdict, out := run(t, o.MarkProgram(), data, newCtx(tc.mark, presetPrio), 1)
		if verdict != tc.verdict || out.priority() != tc.prio {
			t.Errorf("%s: verdict %#x priority %#x, want %#x and %#x", tc.name, verdict, out.priority(), tc.verdict, tc.prio)
		}
	}
}
