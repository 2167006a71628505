package gtpu

import "encoding/binary"

// extHdr is one GTP-U extension header: its type and its content (without
// the length octet and the next-type octet). Content is padded so the
// header is a multiple of 4 octets, unless rawLen overrides the length.
type extHdr struct {
	typ     byte
	content []byte
	rawLen  int // if > 0, written as the length octet as is
}

// pdu builds a DL PDU Session Container (TS 38.415 PDU type 0) for qfi.
func pdu(qfi byte) extHdr { return extHdr{typ: 0x85, content: []byte{0x00, qfi & 0x3f}} }

// pduUL builds a UL PDU Session Container (PDU type 1) for qfi.
func pduUL(qfi byte) extHdr { return extHdr{typ: 0x85, content: []byte{0x10, qfi & 0x3f}} }

// pkt describes an Ethernet/IPv4/UDP/GTP-U test packet.
type pkt struct {
	ipProto   byte   // default 17
	ipOptions []byte // multiple of 4
	fragOff   uint16 // fragment offset in 8-octet units
	dport     uint16 // default 2152
	raw       []byte // if set: UDP payload as is (no GTP-U header)
	gtpFlags  byte   // version/PT bits; default 0x30
	msgType   byte   // default 0xff (G-PDU)
	teid      uint32
	s, pn     bool
	exts      []extHdr // non-empty sets E
	truncate  int      // if > 0, keep only this many bytes
	inner     []byte   // if set: the T-PDU (else 64 bytes, IPv4 version only)
	mf        bool     // more fragments
	ipID      uint16
}

// build encodes the packet with a 64-byte inner IPv4/UDP payload.
func (p pkt) build() []byte {
	var gtp []byte
	if p.raw != nil {
		gtp = p.raw
	} else {
		flags := p.gtpFlags
		if flags == 0 {
			flags = 0x30
		}
		if len(p.exts) > 0 {
			flags |= 0x04
		}
		if p.s {
			flags |= 0x02
		}
		if p.pn {
			flags |= 0x01
		}
		mt := p.msgType
		if mt == 0 {
			mt = 0xff
		}
		gtp = []byte{flags, mt, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(gtp[4:], p.teid)
		if flags&0x07 != 0 {
			next := byte(0)
			if len(p.exts) > 0 {
				next = p.exts[0].typ
			}
			gtp = append(gtp, 0x12, 0x34, 0x00, next)
		}
		for i, e := range p.exts {
			body := append([]byte(nil), e.content...)
			for (len(body)+2)%4 != 0 {
				body = append(body, 0)
			}
			l := byte((len(body) + 2) / 4)
			if e.rawLen > 0 {
				l = byte(e.rawLen)
			}
			next := byte(0)
			if i+1 < len(p.exts) {
				next = p.exts[i+1].typ
			}
			gtp = append(gtp, l)
			gtp = append(gtp, body...)
			gtp = append(gtp, next)
		}
		inner := p.inner
		if inner == nil {
			inner = make([]byte, 64)
			inner[0] = 0x45
		}
		gtp = append(gtp, inner...)
		binary.BigEndian.PutUint16(gtp[2:], uint16(len(gtp)-8))
	}
	dport := p.dport
	if dport == 0 {
		dport = 2152
	}
	udp := make([]byte, 8, 8+len(gtp))
	binary.BigEndian.PutUint16(udp[0:], 2152)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(gtp)))
	udp = append(udp, gtp...)

	ihl := 20 + len(p.ipOptions)
	ip := make([]byte, 20, ihl+len(udp))
	ip[0] = 0x40 | byte(ihl/4)
	binary.BigEndian.PutUint16(ip[2:], uint16(ihl+len(udp)))
	binary.BigEndian.PutUint16(ip[4:], p.ipID)
	binary.BigEndian.PutUint16(ip[6:], p.fragOff&0x1fff)
	if p.mf {
		ip[6] |= 0x20
	}
	ip[8] = 64
	ip[9] = p.ipProto
	if ip[9] == 0 {
		ip[9] = 17
	}
	copy(ip[12:], []byte{10, 100, 0, 1})
	copy(ip[16:], []byte{10, 100, 0, 2})
	ip = append(ip, p.ipOptions...)
	var sum uint32
	for i := 0; i < ihl; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	ip = append(ip, udp...)

	eth := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00}
	out := append(eth, ip...)
	if p.truncate > 0 && p.truncate < len(out) {
		out = out[:p.truncate]
	}
	return out
}
