package gtpu

import (
	"encoding/binary"
	"testing"
)

// refParse is a Go reference of the BPF parser: it returns whether the
// packet (an Ethernet frame) is GTP-U, and if so its TEID and, when a PDU
// Session Container is found, its QFI.
func refParse(b []byte) (gtp bool, teid uint32, qfi uint8, hasQFI bool) {
	if len(b) < 14 || binary.BigEndian.Uint16(b[12:]) != 0x0800 {
		return
	}
	ip := b[14:]
	if len(ip) < 20 || ip[0]>>4 != 4 || ip[0]&0x0f < 5 || ip[9] != 17 || (ip[6]&0x1f)|ip[7] != 0 {
		return
	}
	ihl := int(ip[0]&0x0f) * 4
	if len(ip) < ihl+8 || binary.BigEndian.Uint16(ip[ihl+2:]) != 2152 {
		return
	}
	g := ip[ihl+8:]
	if len(g) < 8 || g[0]&0xf0 != 0x30 {
		return
	}
	gtp, teid = true, binary.BigEndian.Uint32(g[4:])
	if g[1] != 0xff || g[0]&0x07 == 0 || len(g) < 12 || g[0]&0x04 == 0 {
		return
	}
	next, off := g[11], 12
	for i := 0; i < 8; i++ {
		if next == 0 || off >= len(g) {
			return
		}
		l := int(g[off]) * 4
		if l == 0 {
			return
		}
		if next == 0x85 {
			if off+3 > len(g) {
				return
			}
			return gtp, teid, g[off+2] & 0x3f, true
		}
		if off+l-1 >= len(g) {
			return
		}
		next = g[off+l-1]
		off += l
	}
	return
}

// FuzzDownlinkParser feeds arbitrary GTP-U payloads (and IPv4 header
// variants) through gtpu_egress and checks it against refParse: the
// verdict, and the class it picks. Needs root; skips otherwise.
func FuzzDownlinkParser(f *testing.F) {
	for _, tc := range parserCases {
		b := tc.p.build()
		f.Add(b[14:])
	}
	f.Fuzz(func(t *testing.T, ipPacket []byte) {
		// BPF_PROG_TEST_RUN refuses an IPv4 frame with less than an IPv4
		// header (the stack never hands such a packet to tc either).
		if len(ipPacket) < 20 || len(ipPacket) > 1500 {
			return
		}
		o := loadParserMapsOnce(t)
		frame := append([]byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00}, ipPacket...)
		// Each input stands alone: an earlier input's first fragment
		// must not classify this one (refParse keeps no state).
		clearFrags(t, o)
		verdict, out := run(t, o.DownlinkProgram(), frame, newCtx(presetMark, presetPrio), 1)
		gtp, teid, qfi, hasQFI := refParse(frame)
		wantVerdict, wantPrio := uint32(actUnspec), uint32(presetPrio)
		if gtp {
			wantVerdict, wantPrio = actOK, classDefault
			if hasQFI {
				switch {
				case teid == 100 && qfi == 5:
					wantPrio = classA
				case teid == 200 && qfi == 9:
					wantPrio = classB
				case qfi == 7:
					wantPrio = classQFIOnly
				}
			}
		}
		if verdict != wantVerdict || out.priority() != wantPrio || out.mark() != presetMark {
			t.Errorf("verdict %#x priority %#x mark %#x; reference: gtp=%v teid=%d qfi=%d(%v) -> verdict %#x priority %#x",
				verdict, out.priority(), out.mark(), gtp, teid, qfi, hasQFI, wantVerdict, wantPrio)
		}
	})
}

// clearFrags empties the fragment map.
func clearFrags(t *testing.T, o *Objects) {
	t.Helper()
	var k gtpuFragKey
	for o.objs.Frags.NextKey(nil, &k) == nil {
		if err := o.objs.Frags.Delete(k); err != nil {
			t.Fatalf("frags: delete %+v: %v", k, err)
		}
	}
}
