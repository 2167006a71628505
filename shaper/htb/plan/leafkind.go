package plan

import "fmt"

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

// ParseLeafKind parses "auto", "fq_codel" or "fifo".
func ParseLeafKind(s string) (LeafKind, error) {
	switch LeafKind(s) {
	case "", LeafAuto:
		return LeafAuto, nil
	case LeafFQCodel, LeafFIFO:
		return LeafKind(s), nil
	}
	return "", fmt.Errorf("unknown leaf qdisc %q (want auto, fq_codel or fifo)", s)
}
