package shaper

// MarkMask is the part of skb->mark that gtpqos classifies by: the QoS mark
// field of the gtp5g patch (gtp5g-patch/ABI.md, GTP5G_QOS_MARK_MASK,
// shift 0). The patch writes only bits 0-23; bits 24-31 keep what they held
// (bit 31 is gtp5g's framed-route flag), so the fw and bpf classifiers mask
// them off before looking the mark up, and Plan refuses flow marks with bits
// outside the mask.
const MarkMask uint32 = 0x00FFFFFF
