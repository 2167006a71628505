package plan

import "github.com/free5gc/gtpqos/internal/enum"

// LeafKind names the qdisc under each leaf class.
type LeafKind string

const (
	// LeafAuto uses fq_codel where the kernel has it, else FIFO.
	LeafAuto LeafKind = "auto"
	// LeafFQCodel is fq_codel with LeafSpec's limit/target/interval.
	LeafFQCodel LeafKind = "fq_codel"
	// LeafFIFO is a bfifo whose byte limit is the class's ceil × its
	// flow's delay budget (QueueLimit), not HTB's built-in pfifo of
	// txqueuelen packets, whose delay grows as the rate falls.
	LeafFIFO LeafKind = "fifo"
)

var leafKinds = enum.Table[LeafKind]{What: "leaf qdisc", Empty: "auto", Names: []enum.Name[LeafKind]{
	{Value: LeafAuto, Name: "auto"},
	{Value: LeafFQCodel, Name: "fq_codel"},
	{Value: LeafFIFO, Name: "fifo"},
}}

// ParseLeafKind parses "auto", "fq_codel" or "fifo" ("" is auto).
func ParseLeafKind(s string) (LeafKind, error) { return leafKinds.Parse(s) }
