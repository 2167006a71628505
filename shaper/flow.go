package shaper

import (
	"fmt"

	"github.com/free5gc/gtpqos/internal/enum"
)

// Direction says which way a QoS flow's packets travel, and so which
// interface's egress shapes them.
type Direction uint8

const (
	// Downlink packets go DN -> UE and are shaped on N3 egress (after GTP-U
	// encapsulation). gtp5g PDRs with source interface Core.
	Downlink Direction = iota + 1
	// Uplink packets go UE -> DN and are shaped on N6 egress (after GTP-U
	// decapsulation). gtp5g PDRs with source interface Access.
	Uplink
)

var directions = enum.Table[Direction]{What: "direction", Fold: true, Names: []enum.Name[Direction]{
	{Value: Downlink, Name: "downlink", Aliases: []string{"dl"}},
	{Value: Uplink, Name: "uplink", Aliases: []string{"ul"}},
}}

// String returns "downlink" or "uplink".
func (d Direction) String() string { return directions.String(d) }

// FlowID names one QoS flow on a UPF: the PFCP session (SEID) and the id of
// the QER that carries the flow's GBR/MBR. gtp5g keys QERs by (SEID, id), so
// this pair is unique across sessions where a QFI is not.
type FlowID struct {
	SEID  uint64
	QERID uint32
}

// String formats the identity as "seid=S qer=Q".
func (id FlowID) String() string { return fmt.Sprintf("seid=%d qer=%d", id.SEID, id.QERID) }

// Flow is one QoS flow as the shaper sees it: who it is, which way it goes,
// its contract, and how its packets are recognised.
//
// Rates are in bit/s of the user's packets (3GPP semantics). 0 means absent:
// a flow with GBR 0 is non-GBR; a flow with MBR 0 may use the link rate.
type Flow struct {
	// ID is the flow's identity (SEID + QER id).
	ID FlowID
	// Name is an optional human label ("A"), used in output only.
	Name string
	// QFI is the QoS Flow Identifier (6 bits, 0..63).
	QFI uint8
	// Direction selects the tree (downlink on N3, uplink on N6).
	Direction Direction
	// GBR is the Guaranteed Bit Rate in bit/s (0 = non-GBR flow).
	GBR uint64
	// MBR is the Maximum Bit Rate in bit/s (0 = no maximum but the link).
	MBR uint64
	// SessionAMBR is the session's AMBR in bit/s for this direction, from the
	// session-level QER (0 = none). Non-GBR flows of one session share it.
	SessionAMBR uint64
	// Mark is the skb->mark that classifies the flow's packets (set by the
	// gtp5g patch, or by the uplink GTP-U classifier). 0 = no mark.
	Mark uint32
	// TEID is the GTP-U tunnel id that, with QFI, identifies the flow's
	// packets on N3 for the stock-gtp5g classifier: for downlink the FAR's
	// outer-header-creation TEID toward the gNB, for uplink the PDR's F-TEID.
	// 0 = unknown.
	TEID uint32
}

// Label returns the flow's name if set, else its identity.
func (f Flow) Label() string {
	if f.Name != "" {
		return fmt.Sprintf("flow %s (%s)", f.Name, f.ID)
	}
	return "flow " + f.ID.String()
}

// ParseDirection parses "downlink"/"dl" or "uplink"/"ul", in any case.
func ParseDirection(s string) (Direction, error) { return directions.Parse(s) }

// FilterDirection returns the flows going direction d (one device's tree
// holds one direction: downlink on N3, uplink on N6).
func FilterDirection(flows []Flow, d Direction) []Flow {
	out := make([]Flow, 0, len(flows))
	for _, f := range flows {
		if f.Direction == d {
			out = append(out, f)
		}
	}
	return out
}

// GroupBySession indexes flows by their session (SEID), each session's in
// the order given; the slices are new.
func GroupBySession(flows []Flow) map[uint64][]Flow {
	m := make(map[uint64][]Flow)
	for _, f := range flows {
		m[f.ID.SEID] = append(m[f.ID.SEID], f)
	}
	return m
}
