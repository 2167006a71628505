// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// mark.c: the mark classifier. A cls_bpf filter in direct-action mode on
// the root HTB qdisc (see markbpf.go) looks the packet's QoS flow mark up
// in gtpqos_marks (mark -> class minor) and sets skb->tc_classid to it; the
// filter's classid supplies the major. A miss returns TC_ACT_UNSPEC, and
// HTB sends the packet to its default class. One hash lookup per packet,
// whatever the number of flows.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

// The gtp5g patch's QoS mark field (gtp5g-patch/ABI.md, shaper.MarkMask):
// bits 24-31 of skb->mark are not ours (bit 31: framed route).
#define MARK_MASK 0x00FFFFFF

// mark (bits 0-23) -> HTB class minor. One entry per flow class.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} gtpqos_marks SEC(".maps");

// gtpqos_mark24 is the program's name in the kernel and in the filter's
// name: a filter named gtpqos_mark without the 24 masked all 32 bits and
// is replaced, not adopted.
SEC("tc")
int gtpqos_mark24(struct __sk_buff *skb)
{
	__u32 mark = skb->mark & MARK_MASK;
	__u32 *minor = bpf_map_lookup_elem(&gtpqos_marks, &mark);

	if (!minor)
		return TC_ACT_UNSPEC;
	skb->tc_classid = *minor;
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
