package spec

import "github.com/free5gc/gtpqos/internal/enum"

// Kind names a classifier. No other kind than those below is valid.
type Kind string

const (
	// KindAuto picks fw when the kernel accepts a fw filter, else bpf.
	KindAuto Kind = "auto"
	// KindFw classifies by skb->mark with cls_fw filters (one per flow, one
	// filter priority, so the kernel hashes marks into 256 buckets).
	KindFw Kind = "fw"
	// KindBPF classifies by skb->mark with one cls_bpf direct-action program
	// and a BPF hash map mark -> class id (O(1), no cls_fw needed).
	KindBPF Kind = "bpf"
	// KindGTPU classifies stock gtp5g's packets by (TEID, QFI) from the
	// GTP-U header (package shaper/classify/gtpu).
	KindGTPU Kind = "gtpu"
)

var kinds = enum.Table[Kind]{What: "classifier", Empty: "auto", Names: []enum.Name[Kind]{
	{Value: KindAuto, Name: "auto"},
	{Value: KindFw, Name: "fw"},
	{Value: KindBPF, Name: "bpf"},
	{Value: KindGTPU, Name: "gtpu"},
}}

// Known reports whether k is a classifier kind gtpqos has (auto, fw, bpf or
// gtpu). The empty kind counts as auto.
func (k Kind) Known() bool { return k == "" || kinds.Known(k) }

// ParseKind parses "auto", "fw", "bpf" or "gtpu" ("" is auto).
func ParseKind(s string) (Kind, error) { return kinds.Parse(s) }
