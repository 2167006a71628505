package gtp5g

import "fmt"

// MarkMode is the gtp5g-patch series' flow-mark mode: what gtp5g writes
// into the mark field of skb->mark.
type MarkMode uint8

// Mark modes (gtp5g-patch/ABI.md).
const (
	// MarkOff: the datapath never writes skb->mark (stock behaviour).
	MarkOff MarkMode = 0
	// MarkQFI: mark field = the PDR's QFI (the seed's mode).
	MarkQFI MarkMode = 1
	// MarkFlow: mark field = the QER's flow mark, unique per QoS flow across
	// sessions.
	MarkFlow MarkMode = 2
	// MarkPDR: mark field = the PDR's own mark, unique per PDR across
	// sessions whatever its QER list holds; user space says which QoS flow
	// each PDR belongs to (GTP5G_QOS_F_PDR_MARK).
	MarkPDR MarkMode = 3
)

// String returns "off", "qfi", "flow" or "pdr".
func (m MarkMode) String() string {
	switch m {
	case MarkOff:
		return "off"
	case MarkQFI:
		return "qfi"
	case MarkFlow:
		return "flow"
	case MarkPDR:
		return "pdr"
	default:
		return fmt.Sprintf("mark-mode(%d)", uint8(m))
	}
}

// ParseMarkMode parses "off", "qfi", "flow" or "pdr" (as
// /proc/gtp5g/qos_mark reads) or "0" to "3".
func ParseMarkMode(s string) (MarkMode, error) {
	switch s {
	case "off", "0":
		return MarkOff, nil
	case "qfi", "1":
		return MarkQFI, nil
	case "flow", "2":
		return MarkFlow, nil
	case "pdr", "3":
		return MarkPDR, nil
	}
	return 0, fmt.Errorf("mark mode %q: want off, qfi, flow or pdr", s)
}

// MarkLayout is where the QoS value sits in skb->mark:
// mark = (mark &^ Mask) | ((value << Shift) & Mask). Bit 31 (gtp5g's
// framed-route flag) is outside the mask.
type MarkLayout struct {
	Mode  MarkMode
	Mask  uint32
	Shift uint8
}

// Value returns the QoS value carried in mark.
func (l MarkLayout) Value(mark uint32) uint32 { return (mark & l.Mask) >> l.Shift }
