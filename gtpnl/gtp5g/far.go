package gtp5g

import (
	"fmt"
	"net/netip"
)

// FAR is one Forwarding Action Rule as gtp5g holds it (PFCP, TS 29.244
// §7.5.2.3), keyed by (SEID, ID).
type FAR struct {
	// SEID is the local F-SEID of the PFCP session (0 when gtp5g has none).
	SEID uint64
	// ID is the FAR id, unique inside the session.
	ID uint32
	// ApplyAction is the apply action flags.
	ApplyAction ApplyAction
	// Forwarding holds the forwarding parameters; nil when absent.
	Forwarding *ForwardingParameters
	// RelatedPDRs are the ids of the session's PDRs pointing at this FAR.
	RelatedPDRs []uint16
}

// String formats the FAR's identity for logs.
func (f FAR) String() string {
	return fmt.Sprintf("far seid=%d id=%d action=%#x", f.SEID, f.ID, uint16(f.ApplyAction))
}

// ApplyAction is the PFCP Apply Action bit set as gtp5g keeps it.
type ApplyAction uint16

// Apply action bits (gtp5g include/far.h).
const (
	ActionDrop ApplyAction = 0x01
	ActionForw ApplyAction = 0x02
	ActionBuff ApplyAction = 0x04
	ActionNocp ApplyAction = 0x08
	ActionDupl ApplyAction = 0x10
)

// ForwardingParameters are a FAR's forwarding parameters.
type ForwardingParameters struct {
	// OuterHeaderCreation is the GTP-U header to push; nil when absent.
	OuterHeaderCreation *OuterHeaderCreation
	// ForwardingPolicy is the forwarding policy identifier ("" = none).
	ForwardingPolicy string
	// TransportLevelMarking is the ToS/traffic class put on the outer
	// header. gtp5g reports it only with an outer header creation.
	TransportLevelMarking uint8
}

// OuterHeaderCreation says which GTP-U tunnel a FAR encapsulates into.
type OuterHeaderCreation struct {
	// Description is the PFCP outer header creation description bits.
	Description uint16
	// TEID is the peer's tunnel endpoint id.
	TEID uint32
	// Peer is the peer's IPv4 address.
	Peer netip.Addr
	// Port is the peer's UDP port (0 = default 2152).
	Port uint16
}
