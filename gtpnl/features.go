package gtpnl

import "strings"

// Features is the bitmap of what the gtpqos gtp5g-patch series adds to the
// loaded module, as its gtp5g_qos family's GET_FEATURES reports it. A
// stock gtp5g (no gtp5g_qos family) has none.
type Features uint32

// Feature bits (gtp5g-patch/ABI.md).
const (
	// FeatureFlowMark: the datapath sets skb->mark per the mark mode, and
	// gtp5g_qos dumps the QFI and flow mark of each PDR and QER.
	FeatureFlowMark Features = 1 << 0
	// FeatureQoSEvents: gtp5g_qos's multicast group "events" carries
	// QER/PDR/FAR change events (joining it needs CAP_NET_ADMIN).
	FeatureQoSEvents Features = 1 << 1
	// FeaturePolicerCtrl: GET/SET_POLICER commands.
	FeaturePolicerCtrl Features = 1 << 2
	// FeatureMarkCtrl: GET/SET_QOS_MARK commands and /proc/gtp5g/qos_mark.
	FeatureMarkCtrl Features = 1 << 3
	// FeaturePDRMark: mark mode "pdr" (3): every PDR carries a mark of its
	// own, reported as the PDR's flow mark in dumps and events.
	FeaturePDRMark Features = 1 << 4
)

// Has reports whether every bit of want is set.
func (f Features) Has(want Features) bool { return f&want == want }

// String lists the features by name, comma-separated ("none" when empty).
func (f Features) String() string {
	var names []string
	for _, x := range []struct {
		bit  Features
		name string
	}{
		{FeatureFlowMark, "flow-mark"},
		{FeatureQoSEvents, "qos-events"},
		{FeaturePolicerCtrl, "policer-ctrl"},
		{FeatureMarkCtrl, "mark-ctrl"},
		{FeaturePDRMark, "pdr-mark"},
	} {
		if f&x.bit != 0 {
			names = append(names, x.name)
			f &^= x.bit
		}
	}
	if f != 0 {
		names = append(names, "unknown")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}
