package gtp5g

import "fmt"

// QER is one QoS Enforcement Rule as gtp5g holds it (PFCP, TS 29.244
// §7.5.2.5), keyed by (SEID, ID).
type QER struct {
	// SEID is the local F-SEID of the PFCP session (0 when gtp5g has none).
	SEID uint64
	// ID is the QER id, unique inside the session.
	ID uint32
	// Gate is the uplink/downlink gate status.
	Gate Gate
	// MBR is the Maximum Bit Rate in bit/s (0 = absent).
	MBR Bitrate
	// GBR is the Guaranteed Bit Rate in bit/s (0 = absent).
	GBR Bitrate
	// CorrelationID is the QER correlation id (0 = absent).
	CorrelationID uint32
	// QFI is the QoS Flow Identifier (6 bits; 0 = none).
	QFI uint8
	// PPI is the Paging Policy Indicator.
	PPI uint8
	// RQI is the Reflective QoS Indicator.
	RQI bool
	// RCSR is the QER Control Indications (RCSR flag octet).
	RCSR uint8
	// RelatedPDRs are the ids of the PDRs of the same session that point at
	// this QER, as gtp5g reports them.
	RelatedPDRs []uint16
	// FlowMark is the mark value (1..0xFFFFFF) the gtp5g-patch series
	// allocates to this QER, unique across sessions; packets carry it in
	// mark mode "flow". Reported by the gtp5g_qos family; 0 = not reported
	// (stock gtp5g).
	FlowMark uint32
}

// String formats the QER's identity and rates for logs.
func (q QER) String() string {
	return fmt.Sprintf("qer seid=%d id=%d qfi=%d gbr=%s mbr=%s", q.SEID, q.ID, q.QFI, q.GBR, q.MBR)
}

// Bitrate is a pair of uplink and downlink bit rates in bit/s.
//
// gtp5g stores PFCP's 40-bit kbit/s values split into a high 32-bit and a
// low 8-bit part; the decoder joins them and multiplies by 1000.
type Bitrate struct {
	Uplink   uint64
	Downlink uint64
}

// IsZero reports whether both directions are 0 (absent).
func (b Bitrate) IsZero() bool { return b.Uplink == 0 && b.Downlink == 0 }

// String formats the rates as "ul/dl" in bit/s.
func (b Bitrate) String() string { return fmt.Sprintf("%d/%d", b.Uplink, b.Downlink) }

// Gate is the PFCP Gate Status octet: bits 4-3 the uplink gate, bits 2-1 the
// downlink gate, 0 meaning open and 1 closed.
type Gate uint8

// UplinkOpen reports whether the uplink gate is open.
func (g Gate) UplinkOpen() bool { return (g>>2)&0x3 == 0 }

// DownlinkOpen reports whether the downlink gate is open.
func (g Gate) DownlinkOpen() bool { return g&0x3 == 0 }
