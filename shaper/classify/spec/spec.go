// Package spec is what a classifier is asked to make true, without the
// kernel: the classifier kinds, the entries binding a flow to a class, the
// table of them, and the filter priorities gtpqos uses. Planning (package
// shaper/htb/plan) builds these; package classify, which writes them,
// re-exports them, so a planner needs no netlink or BPF code.
//
// It may import the model (package shaper) and the standard library only.
package spec

import (
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
)

// Entry binds one flow's packets to a class: by mark (mark classifiers) or
// by (TEID, QFI) (GTP-U classifiers). An entry lacking the key a classifier
// needs is skipped: such packets reach the default class.
type Entry struct {
	// ClassID is the full tc class id (major<<16 | minor).
	ClassID uint32
	// Flow names the flow, for messages.
	Flow shaper.FlowID
	// Mark is the skb->mark (masked with shaper.MarkMask), 0 = none.
	Mark uint32
	// TEID and QFI identify the flow's GTP-U packets on N3.
	TEID uint32
	QFI  uint8
}

// Table is what a classifier makes true on one device.
type Table struct {
	// Default is the class id unclassified packets go to.
	Default uint32
	// Entries are the flow classes' bindings, sorted by ClassID.
	Entries []Entry
}

// Handle formats a class id as tc does: "6771:1a".
func Handle(classID uint32) string { return fmt.Sprintf("%x:%x", classID>>16, classID&0xffff) }

// Filter priorities gtpqos uses on its root qdisc.
const (
	// FwPrio is the priority of the fw filters (all flows in one priority,
	// so cls_fw hashes marks: the cost does not grow with the flow count).
	FwPrio uint16 = 10
	// BPFPrio is the priority of the cls_bpf mark classifier.
	BPFPrio uint16 = 20
)
