// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// gtpu.c: classify GTP-U packets on a UPF's N3 interface by (TEID, QFI),
// for free5GC's stock gtp5g, which sets no skb->mark of its own.
//
//   gtpu_egress  (clsact egress on N3, downlink): sets skb->priority to the
//                HTB class id of the flow, so HTB picks the leaf directly
//                without running its filter chain under the root lock.
//   gtpu_ingress (clsact ingress on N3, uplink): sets skb->mark to the
//                flow's mark before gtp5g decapsulates; the N6 egress tree
//                classifies the decapsulated packet by mark.
//   mark_egress  (clsact egress on N6, optional): sets skb->priority to the
//                class id the mark (bits 0-23, MARK_MASK) names, for
//                kernels without cls_fw.
//
// The parser (TS 29.281, TS 38.415) is shaper/bpf/gtpu_parse.h and the
// SDF rule matcher shaper/bpf/sdf_match.h; the edt pacer shares both.
//
// The programs load with CAP_BPF and CAP_NET_ADMIN alone. Without
// CAP_PERFMON the verifier refuses pointer arithmetic whose offset is a
// register or differs between paths, refuses a pointer that steps past a
// map value's end even on a path only a mispredicted branch takes, and
// follows those mispredicted paths too: so the extension header walk and
// the SDF rules are written out step by step rather than looped over.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "gtpu_parse.h"
#include "sdf_match.h"

// The gtp5g patch's QoS mark field (gtp5g-patch/ABI.md, shaper.MarkMask):
// bits 24-31 of skb->mark are not ours (bit 31: framed route).
#define MARK_MASK 0x00FFFFFF

// Link-layer header length in front of the IPv4 header: 14 on Ethernet,
// 0 on an L3 device. Rewritten by the loader before the program loads.
volatile const __u32 l2_len = 14;

// flow_key (gtpu_parse.h): teid == 0 means "any TEID" (QFI-only entries,
// looked up on a miss).

// Downlink: (TEID, QFI) -> HTB class id (major << 16 | minor).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, __u32);
} dl_class SEC(".maps");

// Uplink: (TEID, QFI) -> skb->mark.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, __u32);
} ul_mark SEC(".maps");

// N6: skb->mark -> HTB class id.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} mark_class SEC(".maps");

// config[0]: class id for GTP-U packets no flow claims on N3 egress
// (0 = leave skb->priority alone).
struct gtpu_config {
	__u32 dl_default_class;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gtpu_config);
} config SEC(".maps");

// TEID -> the session's SDF rules, per direction.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct sdf_rules);
} dl_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct sdf_rules);
} ul_rules SEC(".maps");

// frags: frag_key (gtpu_parse.h) -> the value the first fragment got;
// frag_key.dir is 0 on egress (value: class id), 1 on ingress (value: mark).
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct frag_key);
	__type(value, __u32);
} frags SEC(".maps");

// Per-CPU packet counters: enum stat for gtpu_egress, STAT_MAX + enum stat
// for gtpu_ingress.
enum stat {
	STAT_NOT_GTP = 0,  // not IPv4/UDP/2152/GTPv1: untouched
	STAT_HIT = 1,      // (TEID, QFI) or QFI-only entry found
	STAT_MISS = 2,     // GTP-U, no entry: default class / no mark
	STAT_NO_QFI = 3,   // GTP-U without a usable PDU Session Container
	STAT_SDF_HIT = 4,  // an SDF rule of the TEID's session matched
	STAT_FRAG_HIT = 5, // a non-first fragment followed its first fragment
	STAT_FRAG_MISS = 6, // a non-first fragment whose first was not seen
	STAT_MAX = 7,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);
	if (v)
		*v += 1;
}

// lookup finds the value for (TEID, QFI), falling back to a QFI-only entry.
static __always_inline __u32 *lookup(void *map, struct flow_key *key)
{
	__u32 *v = bpf_map_lookup_elem(map, key);
	if (v)
		return v;
	struct flow_key any = { .teid = 0, .qfi = key->qfi };
	return bpf_map_lookup_elem(map, &any);
}

// classify_gtp finds a GTP-U packet's value: the session's SDF rules
// first (keyed by TEID alone, so whatever QFI the wire carries), then
// (TEID, QFI). found is 0 when neither knows the packet.
static __always_inline int classify_gtp(struct __sk_buff *skb, int r, struct flow_key *key, struct pkt *pk,
					void *rules, void *keys, __u32 *value, __u32 stat_base)
{
	struct sdf_rules *rs = bpf_map_lookup_elem(rules, &key->teid);
	if (rs && match_sdf(skb, pk, rs, value)) {
		count(stat_base + STAT_SDF_HIT);
		return 1;
	}
	if (r == PARSE_GTP_QFI) {
		__u32 *v = lookup(keys, key);
		if (v) {
			count(stat_base + STAT_HIT);
			*value = *v;
			return 1;
		}
		count(stat_base + STAT_MISS);
	} else {
		count(stat_base + STAT_NO_QFI);
	}
	return 0;
}

// remember stores a first fragment's value for the rest of its datagram.
static __always_inline void remember(struct pkt *pk, __u8 dir, __u32 value)
{
	if (!pk->first_frag)
		return;
	pk->frag.dir = dir;
	bpf_map_update_elem(&frags, &pk->frag, &value, BPF_ANY);
}

// recall finds the value of a non-first fragment's first fragment.
static __always_inline __u32 *recall(struct pkt *pk, __u8 dir)
{
	pk->frag.dir = dir;
	return bpf_map_lookup_elem(&frags, &pk->frag);
}

SEC("tc")
int gtpu_egress(struct __sk_buff *skb)
{
	struct flow_key key = {};
	struct pkt pk = {};
	__u32 value = 0;
	int r = gtpu_parse(skb, l2_len, &key, &pk);

	if (r == PARSE_NOT_GTP) {
		if (pk.later_frag) {
			__u32 *v = recall(&pk, 0);
			if (v) {
				count(STAT_FRAG_HIT);
				if (*v)
					skb->priority = *v;
				return TC_ACT_OK;
			}
			count(STAT_FRAG_MISS);
		}
		count(STAT_NOT_GTP);
		return TC_ACT_UNSPEC;
	}
	if (!classify_gtp(skb, r, &key, &pk, &dl_rules, &dl_class, &value, 0))
		value = 0;
	if (value == 0) {
		__u32 zero = 0;
		struct gtpu_config *cfg = bpf_map_lookup_elem(&config, &zero);
		if (cfg)
			value = cfg->dl_default_class;
	}
	if (value)
		skb->priority = value;
	remember(&pk, 0, value);
	return TC_ACT_OK;
}

SEC("tc")
int gtpu_ingress(struct __sk_buff *skb)
{
	struct flow_key key = {};
	struct pkt pk = {};
	__u32 value = 0;
	int r = gtpu_parse(skb, l2_len, &key, &pk);

	if (r == PARSE_NOT_GTP) {
		if (pk.later_frag) {
			__u32 *v = recall(&pk, 1);
			if (v) {
				count(STAT_MAX + STAT_FRAG_HIT);
				if (*v)
					skb->mark = *v;
				return TC_ACT_OK;
			}
			count(STAT_MAX + STAT_FRAG_MISS);
		}
		count(STAT_MAX + STAT_NOT_GTP);
		return TC_ACT_UNSPEC;
	}
	if (classify_gtp(skb, r, &key, &pk, &ul_rules, &ul_mark, &value, STAT_MAX) && value)
		skb->mark = value;
	remember(&pk, 1, value);
	return TC_ACT_OK;
}

SEC("tc")
int mark_egress(struct __sk_buff *skb)
{
	__u32 mark = skb->mark & MARK_MASK;

	if (mark == 0)
		return TC_ACT_UNSPEC;
	__u32 *cls = bpf_map_lookup_elem(&mark_class, &mark);
	if (!cls)
		return TC_ACT_UNSPEC;
	skb->priority = *cls;
	return TC_ACT_OK;
}

char __license[] SEC("license") = "Dual MIT/GPL";
