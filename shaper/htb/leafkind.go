package htb

import "fmt"

// LeafKind names the qdisc under each leaf class.
type LeafKind string

const (
	// LeafAuto uses fq_codel where the kernel has it, else FIFO.
	LeafAuto LeafKind = "auto"
	// LeafFQCodel is fq_codel with LeafSpec's limit/target/interval.
	LeafFQCodel LeafKind = "fq_codel"
	// LeafFIFO is HTB's built-in leaf: a pfifo whose limit is the device's
	// txqueuelen. gtpqos creates no qdisc object for it.
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
