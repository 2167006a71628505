package classify

import "github.com/free5gc/gtpqos/shaper/classify/spec"

// The classifier kinds, entries and tables are package spec's (pure, so
// planning needs no netlink): these names keep classify's API whole.
type (
	// Kind names a classifier.
	Kind = spec.Kind
	// Entry binds one flow's packets to a class.
	Entry = spec.Entry
	// Table is what a classifier makes true on one device.
	Table = spec.Table
)

// The classifier kinds (spec.Kind's).
const (
	KindAuto = spec.KindAuto
	KindFw   = spec.KindFw
	KindBPF  = spec.KindBPF
	KindGTPU = spec.KindGTPU
)

// Filter priorities gtpqos uses on its root qdisc (spec's).
const (
	FwPrio  = spec.FwPrio
	BPFPrio = spec.BPFPrio
)

// Handle formats a class id as tc does: "6771:1a".
func Handle(classID uint32) string { return spec.Handle(classID) }
