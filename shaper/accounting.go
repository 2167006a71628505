package shaper

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/free5gc/gtpqos/internal/enum"
)

// Accounting says which bytes a class's rate counts.
//
// A QER's GBR and MBR are contracts on the QoS flow's own packets (the
// user's IP packets, the PDUs of the PDU session). On N3 every downlink
// packet leaves as a frame 58 bytes longer (untagged Ethernet, IPv4): a
// class that counts frames gives each flow less than its contract, by a
// fraction that grows as packets shrink (31% for 128-byte packets).
type Accounting uint8

const (
	// AccountPacket (the default): every class counts the user's packets
	// (the inner IP packet on N3, the IP packet on N6), as 3GPP defines a
	// flow's bit rate; only the link class, which stands for the wire,
	// counts whole frames.
	AccountPacket Accounting = iota
	// AccountFrame: every class counts the whole frame at the qdisc (on N3
	// the GTP-U frame), for comparison and for operators whose contracts
	// are on wire bytes.
	AccountFrame
)

var accountings = enum.Table[Accounting]{What: "accounting", Empty: "packet", Names: []enum.Name[Accounting]{
	{Value: AccountPacket, Name: "packet"},
	{Value: AccountFrame, Name: "frame"},
}}

// String returns "packet" or "frame".
func (a Accounting) String() string { return accountings.String(a) }

// ParseAccounting parses "packet" or "frame" ("" is packet).
func ParseAccounting(s string) (Accounting, error) { return accountings.Parse(s) }

// Overhead is what the policy says about the bytes a frame at the qdisc
// carries besides the user's packet: derived by the backend from the device
// (the zero value, "auto"), or a fixed number of bytes.
type Overhead struct {
	// Fixed is true when the operator gave Bytes; false: auto.
	Fixed bool
	// Bytes is the fixed overhead (Fixed only).
	Bytes uint32
}

// MaxOverhead bounds a fixed overhead: more than any encapsulation gtp5g
// sends (IPv6 with VLAN tags is 80 bytes) and well below a frame.
const MaxOverhead = 512

// ParseOverhead parses "auto" (or "") or a number of bytes, 0..MaxOverhead.
func ParseOverhead(s string) (Overhead, error) {
	t := strings.TrimSpace(s)
	if t == "" || t == "auto" {
		return Overhead{}, nil
	}
	v, err := strconv.ParseUint(strings.TrimSuffix(strings.ToLower(t), "b"), 10, 32)
	if err != nil || v > MaxOverhead {
		return Overhead{}, fmt.Errorf("invalid overhead %q: want auto or a whole number of bytes 0..%d", s, MaxOverhead)
	}
	return Overhead{Fixed: true, Bytes: uint32(v)}, nil
}

// String returns "auto" or the bytes ("58").
func (o Overhead) String() string {
	if !o.Fixed {
		return "auto"
	}
	return strconv.FormatUint(uint64(o.Bytes), 10)
}

// Header sizes in bytes, as they sit in a frame at the qdisc.
const (
	// EthernetHeader is the Ethernet header (destination, source, type).
	EthernetHeader = 14
	// VLANTag is one 802.1Q tag, when it is in the packet (a VLAN device
	// with reorder_hdr off); by default the kernel carries tags beside the
	// packet, not in it.
	VLANTag = 4
	// IPv4Header and IPv6Header are the outer IP header of the N3 tunnel
	// (IPv4 without options).
	IPv4Header = 20
	IPv6Header = 40
	// UDPHeader is the outer UDP header (port 2152).
	UDPHeader = 8
	// GTPUHeader is GTP-U's mandatory header.
	GTPUHeader = 8
	// GTPUOptional is GTP-U's optional fields (sequence number, N-PDU
	// number, next extension header type), present when an extension
	// header follows.
	GTPUOptional = 4
	// PDUSessionContainer is the PDU Session Container extension header
	// (TS 38.415) that carries the QFI; gtp5g adds it when the PDR has a
	// QFI.
	PDUSessionContainer = 4
)

// Encap is what surrounds the user's packet in a frame at a device's qdisc,
// as a backend reads it from the device.
type Encap struct {
	// L2 is the link-layer header counted in the packet's length at the
	// qdisc: 14 on Ethernet, 18 when a VLAN device keeps its tag in the
	// packet, 0 on raw-IP devices (tun, gtp, ipip).
	L2 uint32
	// L2Name names it for output ("Ethernet", "raw IP").
	L2Name string
	// OuterIPv6 says the N3 tunnel runs over IPv6 (40-byte outer header).
	OuterIPv6 bool
}

// DefaultEncap is an untagged Ethernet device with an IPv4 N3 tunnel: what
// a plan made without a device assumes.
var DefaultEncap = Encap{L2: EthernetHeader, L2Name: "Ethernet"}

// part is one header of an encapsulation.
type part struct {
	name  string
	bytes uint32
}

// parts lists the headers around the user's packet on a device that shapes
// dir's flows: on N3 (downlink) the link layer, the outer IP, UDP and GTP-U
// with its optional fields and PDU Session Container; on N6 (uplink) the
// link layer alone.
func (e Encap) parts(dir Direction) []part {
	name := e.L2Name
	if name == "" {
		name = "L2"
	}
	ps := []part{{name, e.L2}}
	if dir == Uplink {
		return ps
	}
	ip := part{"IPv4", IPv4Header}
	if e.OuterIPv6 {
		ip = part{"IPv6", IPv6Header}
	}
	return append(ps, ip, part{"UDP", UDPHeader}, part{"GTP-U", GTPUHeader},
		part{"optional fields", GTPUOptional}, part{"PDU Session Container", PDUSessionContainer})
}

// Overhead returns the bytes a frame at the qdisc carries besides the
// user's packet on a device that shapes dir's flows.
func (e Encap) Overhead(dir Direction) uint32 {
	var n uint32
	for _, p := range e.parts(dir) {
		n += p.bytes
	}
	return n
}

// Describe spells the overhead out: "Ethernet 14 + IPv4 20 + UDP 8 +
// GTP-U 8 + optional fields 4 + PDU Session Container 4 = 58".
func (e Encap) Describe(dir Direction) string {
	ps := e.parts(dir)
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprintf("%s %d", p.name, p.bytes)
	}
	if len(ps) == 1 {
		return s[0]
	}
	return fmt.Sprintf("%s = %d", strings.Join(s, " + "), e.Overhead(dir))
}

// ResolveOverhead returns the overhead a tree for dir's flows on a device
// with encapsulation e uses under pol, and one line saying where it comes
// from. Frame accounting uses none.
func (p Policy) ResolveOverhead(dir Direction, e Encap) (uint32, string) {
	switch {
	case p.Accounting == AccountFrame:
		return 0, "classes count whole frames"
	case p.Overhead.Fixed:
		return p.Overhead.Bytes, fmt.Sprintf("overhead %d bytes set in the policy", p.Overhead.Bytes)
	}
	side := "N3"
	if dir == Uplink {
		side = "N6"
	}
	return e.Overhead(dir), side + ": " + e.Describe(dir)
}
