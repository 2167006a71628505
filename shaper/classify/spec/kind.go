package spec

import "fmt"

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

// Known reports whether k is a classifier kind gtpqos has (auto, fw, bpf or
// gtpu). The empty kind counts as auto.
func (k Kind) Known() bool {
	switch k {
	case "", KindAuto, KindFw, KindBPF, KindGTPU:
		return true
	}
	return false
}

// ParseKind parses "auto", "fw", "bpf" or "gtpu" ("" is auto).
func ParseKind(s string) (Kind, error) {
	if s == "" {
		return KindAuto, nil
	}
	if k := Kind(s); k.Known() {
		return k, nil
	}
	return "", fmt.Errorf("unknown classifier %q (want auto, fw, bpf or gtpu)", s)
}
