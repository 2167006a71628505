package gtp5gtest

import (
	"net"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/khirono/go-nl"
)

// PDISrcIntf is gtp5g's GTP5G_PDI_SRC_INTF (4): go-gtp5gnl v1.4.6 has no
// name for it (later versions, which go-upf uses, call it PDI_SRC_INTF).
// gtp5g picks the uplink or downlink policer by it.
const PDISrcIntf = 4

// Source interfaces (TS 29.244 §8.2.2) for PDR.SrcIntf.
const (
	// SrcAccess is the access side (uplink, from the gNB).
	SrcAccess = 0
	// SrcCore is the core side (downlink, from the DN).
	SrcCore = 1
)

// Rate returns a QER bit rate attribute (typ gtp5gnl.QER_MBR or
// gtp5gnl.QER_GBR) with uplink and downlink in kbit/s, as PFCP carries
// them, split into gtp5g's HIGH32/LOW8 halves.
func Rate(typ uint16, ulKbps, dlKbps uint64) nl.Attr {
	ulHi, ulLo, dlHi, dlLo := gtp5gnl.QER_MBR_UL_HIGH32, gtp5gnl.QER_MBR_UL_LOW8, gtp5gnl.QER_MBR_DL_HIGH32, gtp5gnl.QER_MBR_DL_LOW8
	if typ == gtp5gnl.QER_GBR {
		ulHi, ulLo, dlHi, dlLo = gtp5gnl.QER_GBR_UL_HIGH32, gtp5gnl.QER_GBR_UL_LOW8, gtp5gnl.QER_GBR_DL_HIGH32, gtp5gnl.QER_GBR_DL_LOW8
	}
	return nl.Attr{Type: typ, Value: nl.AttrList{
		{Type: uint16(ulHi), Value: nl.AttrU32(ulKbps >> 8)},
		{Type: uint16(ulLo), Value: nl.AttrU8(ulKbps)},
		{Type: uint16(dlHi), Value: nl.AttrU32(dlKbps >> 8)},
		{Type: uint16(dlLo), Value: nl.AttrU8(dlKbps)},
	}}
}

// QER is a QER as the seed's flows use it: an open gate, a QFI, and GBR
// and MBR in kbit/s (the same both ways).
type QER struct {
	// QFI is the QoS flow identifier.
	QFI uint8
	// GBRKbps is the guaranteed bit rate in kbit/s (0 is sent as 0).
	GBRKbps uint64
	// MBRKbps is the maximum bit rate in kbit/s.
	MBRKbps uint64
}

// Attrs returns the QER's attributes in go-upf's order: gate, MBR, GBR,
// QFI.
func (q QER) Attrs() []nl.Attr {
	return []nl.Attr{
		{Type: gtp5gnl.QER_GATE, Value: nl.AttrU8(0)},
		Rate(gtp5gnl.QER_MBR, q.MBRKbps, q.MBRKbps),
		Rate(gtp5gnl.QER_GBR, q.GBRKbps, q.GBRKbps),
		{Type: gtp5gnl.QER_QFI, Value: nl.AttrU8(q.QFI)},
	}
}

// FARForward returns the attributes of a FAR that forwards; with teid != 0
// it adds outer header creation GTP-U/UDP/IPv4 with that TEID toward
// peer:2152.
func FARForward(teid uint32, peer string) []nl.Attr {
	attrs := []nl.Attr{{Type: gtp5gnl.FAR_APPLY_ACTION, Value: nl.AttrU16(0x02)}} // FORW
	if teid != 0 {
		attrs = append(attrs, nl.Attr{Type: gtp5gnl.FAR_FORWARDING_PARAMETER, Value: nl.AttrList{{
			Type: gtp5gnl.FORWARDING_PARAMETER_OUTER_HEADER_CREATION,
			Value: nl.AttrList{
				{Type: gtp5gnl.OUTER_HEADER_CREATION_DESCRIPTION, Value: nl.AttrU16(0x0100)},
				{Type: gtp5gnl.OUTER_HEADER_CREATION_O_TEID, Value: nl.AttrU32(teid)},
				{Type: gtp5gnl.OUTER_HEADER_CREATION_PEER_ADDR_IPV4, Value: IPv4(peer)},
				{Type: gtp5gnl.OUTER_HEADER_CREATION_PORT, Value: nl.AttrU16(2152)},
			},
		}}})
	}
	return attrs
}

// PDR describes a PDR; zero fields are left out (SrcIntf is always sent).
type PDR struct {
	// Precedence is the PDR's precedence (lower wins).
	Precedence uint32
	// SrcIntf is SrcAccess or SrcCore.
	SrcIntf uint8
	// UEIP is the PDI's UE IPv4 address.
	UEIP string
	// FTEID is the PDI's local TEID (with FTEIDAddr).
	FTEID uint32
	// FTEIDAddr is the F-TEID's IPv4 address.
	FTEIDAddr string
	// SDFSrc adds the SDF filter "permit out ip from SDFSrc to UEIP".
	SDFSrc string
	// OHR adds outer header removal GTP-U/UDP/IPv4.
	OHR bool
	// FARID is the FAR the PDR applies.
	FARID uint32
	// QERIDs are the QERs the PDR applies, in order.
	QERIDs []uint32
}

// Attrs returns the PDR's attributes: precedence, FAR, outer header
// removal, QERs, then the PDI.
func (p PDR) Attrs() []nl.Attr {
	attrs := []nl.Attr{
		{Type: gtp5gnl.PDR_PRECEDENCE, Value: nl.AttrU32(p.Precedence)},
		{Type: gtp5gnl.PDR_FAR_ID, Value: nl.AttrU32(p.FARID)},
	}
	if p.OHR {
		attrs = append(attrs, nl.Attr{Type: gtp5gnl.PDR_OUTER_HEADER_REMOVAL, Value: nl.AttrU8(0)})
	}
	for _, q := range p.QERIDs {
		attrs = append(attrs, nl.Attr{Type: gtp5gnl.PDR_QER_ID, Value: nl.AttrU32(q)})
	}
	pdi := nl.AttrList{{Type: PDISrcIntf, Value: nl.AttrU8(p.SrcIntf)}}
	if p.UEIP != "" {
		pdi = append(pdi, nl.Attr{Type: gtp5gnl.PDI_UE_ADDR_IPV4, Value: IPv4(p.UEIP)})
	}
	if p.FTEID != 0 {
		pdi = append(pdi, nl.Attr{Type: gtp5gnl.PDI_F_TEID, Value: nl.AttrList{
			{Type: gtp5gnl.F_TEID_I_TEID, Value: nl.AttrU32(p.FTEID)},
			{Type: gtp5gnl.F_TEID_GTPU_ADDR_IPV4, Value: IPv4(p.FTEIDAddr)},
		}})
	}
	if p.SDFSrc != "" {
		full := nl.AttrBytes{0xff, 0xff, 0xff, 0xff}
		pdi = append(pdi, nl.Attr{Type: gtp5gnl.PDI_SDF_FILTER, Value: nl.AttrList{{
			Type: gtp5gnl.SDF_FILTER_FLOW_DESCRIPTION,
			Value: nl.AttrList{
				{Type: gtp5gnl.FLOW_DESCRIPTION_ACTION, Value: nl.AttrU8(gtp5gnl.SDF_FILTER_PERMIT)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_DIRECTION, Value: nl.AttrU8(gtp5gnl.SDF_FILTER_OUT)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_PROTOCOL, Value: nl.AttrU8(0xff)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_SRC_IPV4, Value: IPv4(p.SDFSrc)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_SRC_MASK, Value: full},
				{Type: gtp5gnl.FLOW_DESCRIPTION_DEST_IPV4, Value: IPv4(p.UEIP)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_DEST_MASK, Value: full},
			},
		}}})
	}
	return append(attrs, nl.Attr{Type: gtp5gnl.PDR_PDI, Value: pdi})
}

// IPv4 returns the 4-byte form of a dotted IPv4 address as an attribute
// value (nil bytes for anything else).
func IPv4(s string) nl.AttrBytes { return nl.AttrBytes(net.ParseIP(s).To4()) }
