package gtp5g

import "github.com/free5gc/gtpqos/internal/enum"

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

// markModes names the modes as /proc/gtp5g/qos_mark reads them; the
// numbers the knob also takes parse too.
var markModes = enum.Table[MarkMode]{What: "mark mode", Names: []enum.Name[MarkMode]{
	{Value: MarkOff, Name: "off", Aliases: []string{"0"}},
	{Value: MarkQFI, Name: "qfi", Aliases: []string{"1"}},
	{Value: MarkFlow, Name: "flow", Aliases: []string{"2"}},
	{Value: MarkPDR, Name: "pdr", Aliases: []string{"3"}},
}}

// String returns "off", "qfi", "flow" or "pdr".
func (m MarkMode) String() string { return markModes.String(m) }

// ParseMarkMode parses "off", "qfi", "flow" or "pdr" (as
// /proc/gtp5g/qos_mark reads) or "0" to "3".
func ParseMarkMode(s string) (MarkMode, error) { return markModes.Parse(s) }

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
