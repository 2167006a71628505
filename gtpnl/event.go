package gtpnl

import (
	"fmt"

	"github.com/free5gc/gtpqos/internal/enum"
)

// EventOp says what happened to a rule.
type EventOp uint8

// Event operations (gtp5g-patch/ABI.md).
const (
	// EventAdd: a new rule was created.
	EventAdd EventOp = 1
	// EventUpdate: an existing rule was replaced (NLM_F_REPLACE); the event
	// carries the state after the update.
	EventUpdate EventOp = 2
	// EventDelete: a rule was deleted; the event carries its last state.
	EventDelete EventOp = 3
)

var eventOps = enum.Table[EventOp]{What: "op", Names: []enum.Name[EventOp]{
	{Value: EventAdd, Name: "add"},
	{Value: EventUpdate, Name: "update"},
	{Value: EventDelete, Name: "delete"},
}}

// String returns "add", "update" or "delete" (op(N) for another value).
func (o EventOp) String() string { return eventOps.String(o) }

// Event is one QoS rule change multicast by a patched gtp5g on the
// gtp5g_qos family's event group. Exactly one of QER, PDR and FAR is set.
type Event struct {
	// Op is what happened.
	Op EventOp
	// Seq is the event counter of the gtp5g device's network namespace
	// (per netns in the patch, wraps at 2^32).
	Seq uint32
	// Link is the ifindex of the gtp5g device holding the rule.
	Link uint32
	// Ifname is that device's name.
	Ifname string
	// QER, PDR, FAR: the rule's state (after the change; last state for a
	// delete), with its QFI and flow mark from the event.
	QER *QER
	PDR *PDR
	FAR *FAR
	// IDsOnly marks the delete of a rule gtp5g dropped because an update
	// of it failed: its state may have been half overwritten, so the event
	// names it by SEID and id alone and the rest of the rule is zero.
	IDsOnly bool
}

// String formats the event for logs.
func (e Event) String() string {
	var obj string
	switch {
	case e.QER != nil:
		obj = e.QER.String()
	case e.PDR != nil:
		obj = e.PDR.String()
	case e.FAR != nil:
		obj = e.FAR.String()
	}
	return fmt.Sprintf("%s %s dev=%s seq=%d", e.Op, obj, e.Ifname, e.Seq)
}
