package shaper

// MaxSDFRules is how many SDF rules the stock-gtp5g classifier matches per
// TEID and direction (a bounded loop in its BPF program); MaxSDFPortRanges
// bounds the port ranges per side of one rule. A session with more falls
// back to (TEID, QFI) classification, and the rule view reports it.
const (
	MaxSDFRules      = 16
	MaxSDFPortRanges = 4
)

// SDFRule is one PDR's packet filter as gtp5g matches it against the inner
// IPv4 packet: protocol, source and destination address under their masks,
// port ranges, and the PDR's UE address.
type SDFRule struct {
	// PDR and Precedence identify the PDR and its place (lowest first).
	PDR        uint16
	Precedence uint32
	// Flow is the QoS flow whose class the matched packets belong to; the
	// zero FlowID: none (the default class, unmarked uplink).
	Flow FlowID
	// Proto is the IP protocol (0xff: any).
	Proto uint8
	// Src, SrcMask, Dst and DstMask are IPv4 addresses and masks (a zero
	// mask matches any address).
	Src, SrcMask, Dst, DstMask [4]byte
	// UE is the PDR's UE address (zero: none): the inner destination
	// downlink, the inner source uplink.
	UE [4]byte
	// SrcPorts and DstPorts are inclusive ranges (none: any port).
	SrcPorts, DstPorts []PortRange
}

// PortRange is an inclusive range of ports.
type PortRange struct{ Lo, Hi uint16 }

// SessionRules are the SDF rules of the PDRs whose packets cross N3 under
// one TEID in one direction, in the order gtp5g tries them: downlink, the
// FAR's outer-header-creation TEID; uplink, the PDR's F-TEID.
type SessionRules struct {
	Direction Direction
	TEID      uint32
	SEID      uint64
	Rules     []SDFRule
}
