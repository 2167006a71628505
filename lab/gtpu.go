package lab

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// GTP-U constants (3GPP TS 29.281) and the PDU Session Container
// (TS 38.415) as gtp5g v0.10 writes them.
const (
	// GTPUPort is the GTP-U UDP port.
	GTPUPort = 2152
	// GTPUHeaderLen is what the lab (like gtp5g with a QFI) prepends to an
	// inner IP packet: 8 bytes mandatory header, 4 bytes sequence/N-PDU/
	// next-extension-type, 4 bytes PDU Session Container extension.
	GTPUHeaderLen = 16
	// N3Overhead is the number of bytes N3's Ethernet frame adds to an inner
	// IPv4 packet: GTP-U (16) + outer UDP (8) + outer IPv4 (20) + Ethernet (14).
	N3Overhead = GTPUHeaderLen + 8 + 20 + 14

	gtpFlagsV1PT     = 0x30 // version 1, protocol type GTP
	gtpFlagE         = 0x04 // extension header present
	gtpFlagS         = 0x02 // sequence number present
	gtpFlagPN        = 0x01 // N-PDU number present
	gtpMsgTPDU       = 0xff // G-PDU
	extPDUSessionCtr = 0x85 // PDU Session Container
	pduTypeDL        = 0    // DL PDU SESSION INFORMATION (PDU type 0)
)

// PutGTPUHeader writes, into b[:GTPUHeaderLen], the header gtp5g's
// gtp5g_push_header writes for a downlink T-PDU with a QFI: flags 0x34
// (v1, PT, E), type 255, length = inner + 8, TEID, sequence 0, N-PDU 0,
// next extension type 0x85, then the container: length 1 (4 bytes),
// PDU type 0 (DL), QFI in the low 6 bits, next extension type 0.
func PutGTPUHeader(b []byte, teid uint32, qfi uint8, innerLen int) {
	_ = b[GTPUHeaderLen-1]
	b[0] = gtpFlagsV1PT | gtpFlagE
	b[1] = gtpMsgTPDU
	binary.BigEndian.PutUint16(b[2:4], uint16(innerLen+8))
	binary.BigEndian.PutUint32(b[4:8], teid)
	b[8], b[9] = 0, 0 // sequence number (S flag clear)
	b[10] = 0         // N-PDU number
	b[11] = extPDUSessionCtr
	b[12] = 1              // extension length in 4-byte units
	b[13] = pduTypeDL << 4 // PDU type (high nibble) + spare
	b[14] = qfi & 0x3f     // PPP(0) RQI(0) QFI
	b[15] = 0              // no further extension header
}

// GTPUPacket is a decoded G-PDU.
type GTPUPacket struct {
	// TEID is the tunnel endpoint id.
	TEID uint32
	// QFI is from the PDU Session Container; HasQFI says whether one was present.
	QFI    uint8
	HasQFI bool
	// PDUType is the container's PDU type (0 = DL, 1 = UL).
	PDUType uint8
	// Inner is the encapsulated packet (a slice of the input).
	Inner []byte
}

var errShort = errors.New("truncated")

// ParseGTPU decodes a G-PDU (the UDP payload of a GTP-U packet), walking
// any extension header chain. It returns an error naming what is wrong for
// anything that is not a well-formed version 1 T-PDU.
func ParseGTPU(b []byte) (GTPUPacket, error) {
	var p GTPUPacket
	if len(b) < 8 {
		return p, fmt.Errorf("gtp-u header: %w (%d bytes)", errShort, len(b))
	}
	flags := b[0]
	if flags>>5 != 1 || flags&0x10 == 0 {
		return p, fmt.Errorf("gtp-u header: not GTPv1 (flags %#02x)", flags)
	}
	if b[1] != gtpMsgTPDU {
		return p, fmt.Errorf("gtp-u header: message type %d is not a T-PDU", b[1])
	}
	length := int(binary.BigEndian.Uint16(b[2:4]))
	if 8+length > len(b) {
		return p, fmt.Errorf("gtp-u header: length %d exceeds the %d bytes received", length, len(b)-8)
	}
	b = b[:8+length]
	p.TEID = binary.BigEndian.Uint32(b[4:8])
	off := 8
	if flags&(gtpFlagE|gtpFlagS|gtpFlagPN) != 0 {
		if len(b) < 12 {
			return p, fmt.Errorf("gtp-u optional fields: %w", errShort)
		}
		next := b[11]
		off = 12
		if flags&gtpFlagE == 0 {
			next = 0
		}
		for next != 0 {
			if off >= len(b) {
				return p, fmt.Errorf("gtp-u extension %#02x: %w", next, errShort)
			}
			n := int(b[off]) * 4
			if n == 0 || off+n > len(b) {
				return p, fmt.Errorf("gtp-u extension %#02x: bad length %d", next, n)
			}
			if next == extPDUSessionCtr && n >= 4 {
				p.PDUType = b[off+1] >> 4
				p.QFI = b[off+2] & 0x3f
				p.HasQFI = true
			}
			next = b[off+n-1]
			off += n
		}
	}
	p.Inner = b[off:]
	return p, nil
}
