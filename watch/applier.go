package watch

import (
	"context"
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
)

// Applier makes one device's tree match a list of flows: it plans (pure)
// and reconciles (netlink) in one call. Apply must be idempotent (a second
// call with the same flows changes nothing) and must adopt a tree it finds
// already in place without recreating it.
type Applier interface {
	// Dev names the device the tree is on ("n3", "eth1").
	Dev() string
	// Apply plans the tree for flows and reconciles the device to it.
	Apply(ctx context.Context, flows []shaper.Flow) (Result, error)
	// Remove deletes everything the applier owns on the device.
	Remove(ctx context.Context) error
	// Stats reads the per-flow class counters.
	Stats(ctx context.Context) ([]ClassStats, error)
}

// Forgetter is implemented by Appliers that trust their last write between
// full resyncs: Forget makes the next Apply read the device's tree from the
// kernel and repair drift. The engine calls it before every full resync
// that has a reason (start, periodic, reconnect, lost events, retry,
// reload); polls and event-driven reconciles trust the last write.
type Forgetter interface {
	Forget()
}

// Result is what one Apply did.
type Result struct {
	// Changes lists each kernel write (empty when in sync).
	Changes []Change
	// Problems lists flows the planner refused or clamped.
	Problems []Problem
	// Flows is the number of flows in the plan; Classes the number of HTB
	// classes in the desired tree.
	Flows, Classes int
}

// Change is one kernel write made by a reconcile.
type Change struct {
	// Op is "add", "change" or "delete".
	Op string
	// Object is what was written: "qdisc", "class", "filter", "map".
	Object string
	// Class is the HTB class id ("1:10"), when the object has one.
	Class string
	// Flow identifies the flow the object serves (zero for shared objects).
	Flow shaper.FlowID
	// QFI is the flow's QFI (when Flow is set).
	QFI uint8
	// Detail is a short human description ("rate 15Mbit ceil 18Mbit").
	Detail string
}

// String formats the change for a log line.
func (c Change) String() string {
	s := c.Op + " " + c.Object
	if c.Class != "" {
		s += " " + c.Class
	}
	if c.Flow != (shaper.FlowID{}) {
		s += fmt.Sprintf(" %s qfi=%d", c.Flow, c.QFI)
	}
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	return s
}

// Problem is a flow the planner refused or clamped.
type Problem struct {
	// Flow is the flow at fault (zero when the problem is global).
	Flow shaper.FlowID
	// QFI is the flow's QFI.
	QFI uint8
	// Msg says what is wrong, naming the field.
	Msg string
}

// String formats the problem for a log line.
func (p Problem) String() string {
	if p.Flow == (shaper.FlowID{}) {
		return p.Msg
	}
	return fmt.Sprintf("%s qfi=%d: %s", p.Flow, p.QFI, p.Msg)
}

// ClassStats are the counters of one flow's class.
type ClassStats struct {
	// Class is the HTB class id ("1:10").
	Class string
	// Flow and QFI identify the flow the class serves.
	Flow shaper.FlowID
	QFI  uint8
	// Bytes and Packets count what the class sent; Drops and Overlimits are
	// HTB's counters.
	Bytes, Packets, Drops, Overlimits uint64
}
