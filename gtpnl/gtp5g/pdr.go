package gtp5g

import (
	"fmt"
	"net/netip"
)

// PDR is one Packet Detection Rule as gtp5g holds it (PFCP, TS 29.244
// §7.5.2.2), keyed by (SEID, ID).
type PDR struct {
	// SEID is the local F-SEID of the PFCP session (0 when gtp5g has none).
	SEID uint64
	// ID is the PDR id, unique inside the session.
	ID uint16
	// Precedence orders PDRs of a session (lower wins).
	Precedence uint32
	// PDI is the packet detection information.
	PDI PDI
	// OuterHeaderRemoval is the outer header removal description
	// (0 = GTP-U/UDP/IPv4), nil when absent.
	OuterHeaderRemoval *uint8
	// FARID is the id of the FAR applied to matched packets (0 = none).
	FARID uint32
	// QERIDs are the ids of the QERs applied to matched packets, in order.
	// free5GC's SMF puts a flow QER and, for non-GBR flows, the session-AMBR
	// QER here.
	QERIDs []uint32
	// URRIDs are the ids of the usage reporting rules.
	URRIDs []uint32
	// RoleAddr is gtp5g's routing role address (not a PFCP IE); invalid when
	// absent.
	RoleAddr netip.Addr
	// QFI is the QFI gtp5g writes into this PDR's GTP-U header, as the
	// gtp5g-patch series' gtp5g_qos family reports it (0 = none or not
	// reported: stock gtp5g does not say).
	QFI uint8
	// FlowMark is the flow mark of the QER that gives this PDR its QFI, as
	// the gtp5g_qos family reports it (0 = none or not reported).
	FlowMark uint32
	// PDRMark is the PDR's own mark, which the datapath writes in mark mode
	// "pdr", as the gtp5g_qos family reports it (GTP5G_QOS_A_PDR_MARK;
	// 0 = none or not reported).
	PDRMark uint32
}

// String formats the PDR's identity for logs.
func (p PDR) String() string {
	return fmt.Sprintf("pdr seid=%d id=%d far=%d qers=%v", p.SEID, p.ID, p.FARID, p.QERIDs)
}

// Interface is a PFCP source interface value (TS 29.244 §8.2.2).
type Interface uint8

// Source interface values.
const (
	// InterfaceAccess is the access side (N3): uplink traffic.
	InterfaceAccess Interface = 0
	// InterfaceCore is the core side (N6/N9): downlink traffic.
	InterfaceCore Interface = 1
	// InterfaceSGiLAN is SGi-LAN / N6-LAN.
	InterfaceSGiLAN Interface = 2
	// InterfaceCPFunction is the CP function.
	InterfaceCPFunction Interface = 3
)

// String names the interface.
func (i Interface) String() string {
	switch i {
	case InterfaceAccess:
		return "access"
	case InterfaceCore:
		return "core"
	case InterfaceSGiLAN:
		return "sgi-lan"
	case InterfaceCPFunction:
		return "cp-function"
	default:
		return fmt.Sprintf("interface(%d)", uint8(i))
	}
}

// PDI is a PDR's packet detection information.
type PDI struct {
	// SourceInterface is where matched packets come from. nil when gtp5g
	// did not report it: stock v0.10.2 accepts it on add but leaves it out of
	// GET/dump replies.
	SourceInterface *Interface
	// UEAddr is the UE's IPv4 address; invalid when absent.
	UEAddr netip.Addr
	// FTEID is the local F-TEID (uplink PDRs); nil when absent.
	FTEID *FTEID
	// SDF is the SDF filter; nil when absent.
	SDF *SDFFilter
	// FramedRoutes are framed routes as "a.b.c.d/len".
	FramedRoutes []string
}

// FTEID is a local fully qualified tunnel endpoint id.
type FTEID struct {
	TEID uint32
	Addr netip.Addr
}

// SDFFilter is a PDI's SDF filter. Zero numeric fields mean absent.
type SDFFilter struct {
	// Rule is the parsed flow description; nil when absent.
	Rule *FlowDescription
	// TOSTrafficClass is the ToS/traffic class value and mask.
	TOSTrafficClass uint16
	// SPI is the security parameter index.
	SPI uint32
	// FlowLabel is the IPv6 flow label.
	FlowLabel uint32
	// FilterID is the SDF filter id.
	FilterID uint32
}

// FlowDescription is gtp5g's parsed IPFilterRule ("permit out ip from A to B").
type FlowDescription struct {
	// Action is 1 for permit (the only action gtp5g accepts).
	Action uint8
	// Direction is 1 for in, 2 for out.
	Direction uint8
	// Protocol is the IP protocol number (0xff = ip, any).
	Protocol uint8
	// Src and Dst are the addresses; SrcMask and DstMask their masks, invalid
	// when gtp5g left them out (meaning a full /32).
	Src, SrcMask, Dst, DstMask netip.Addr
	// SrcPorts and DstPorts are port ranges (empty = any).
	SrcPorts, DstPorts []PortRange
}

// PortRange is an inclusive range of ports.
type PortRange struct {
	Start, End uint16
}
