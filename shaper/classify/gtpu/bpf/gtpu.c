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
// The parser (TS 29.281, TS 38.415) is shaper/bpf/gtpu_parse.h, which the
// edt pacer shares.
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

// The gtp5g patch's QoS mark field (gtp5g-patch/ABI.md, shaper.MarkMask):
// bits 24-31 of skb->mark are not ours (bit 31: framed route).
#define MARK_MASK 0x00FFFFFF
#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))

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

// sdf_rule is one PDR's SDF filter, as gtp5g matches it against the
// inner IPv4 packet (pdr.c sdf_filter_match): protocol (0xff: any),
// source and destination address under their masks, and, when any port
// range is given, the ports read right after a 20-octet IPv4 header.
// Addresses are in network byte order. ue, when not 0, is the PDR's UE
// address: the inner destination downlink, the inner source uplink.
// value is what a match yields: the class id (downlink) or the mark
// (uplink); 0 sends the packet to the default class (unmarked uplink).
#define MAX_SDF_RULES 16
#define MAX_PORT_RANGES 4

struct port_range {
	__u16 lo;
	__u16 hi;
};

struct sdf_rule {
	__u32 src;
	__u32 smask;
	__u32 dst;
	__u32 dmask;
	__u32 ue;
	__u32 value;
	__u8 proto;
	__u8 ue_is_src;
	__u8 nsport;
	__u8 ndport;
	struct port_range sport[MAX_PORT_RANGES];
	struct port_range dport[MAX_PORT_RANGES];
};

// sdf_rules: one session's rules on one TEID, in gtp5g's order
// (precedence, lowest first). n counts the rules used (<= MAX_SDF_RULES).
struct sdf_rules {
	__u32 n;
	struct sdf_rule r[MAX_SDF_RULES];
};

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

// ports_match tells whether port lies in one of the first n ranges at pr
// (n == 0: any port). The ranges are compared one by one at constant offsets.
static __always_inline int ports_match(const struct port_range *pr, __u8 n, __u16 port)
{
	_Static_assert(MAX_PORT_RANGES == 4, "one comparison per range");
	if (n == 0)
		return 1;
	return (pr[0].lo <= port && port <= pr[0].hi) ||
	       (n > 1 && pr[1].lo <= port && port <= pr[1].hi) ||
	       (n > 2 && pr[2].lo <= port && port <= pr[2].hi) ||
	       (n > 3 && pr[3].lo <= port && port <= pr[3].hi);
}

// sdf_pkt is what the rules look at in the inner IPv4 packet.
struct sdf_pkt {
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 have_ports;
	__u8 pad[2];
};

// sdf_rule_match tells whether rule r matches the inner packet p. It is a
// global function: the verifier checks it once, not at each of its calls.
__noinline int sdf_rule_match(const struct sdf_rule *r, const struct sdf_pkt *p)
{
	if (!r || !p)
		return 0;
	// Both addresses are loaded, then one chosen: a load from an address
	// chosen per path is pointer arithmetic the verifier refuses.
	__u32 saddr = READ_ONCE(p->saddr);
	__u32 daddr = READ_ONCE(p->daddr);

	if (r->ue && r->ue != (r->ue_is_src ? saddr : daddr))
		return 0;
	if (r->proto != 0xff && r->proto != p->proto)
		return 0;
	if ((saddr ^ r->src) & r->smask)
		return 0;
	if ((daddr ^ r->dst) & r->dmask)
		return 0;
	if (r->nsport + r->ndport > 0) {
		if (!p->have_ports)
			return 0;
		if (!ports_match(r->sport, r->nsport, p->sport))
			return 0;
		if (!ports_match(r->dport, r->ndport, p->dport))
			return 0;
	}
	return 1;
}

// match_sdf runs the inner IPv4 packet at pk->inner against the rules of
// its TEID's session in order, as gtp5g's pdr_find_by_gtp1u and
// pdr_find_by_ipv4 do. It returns 1 and sets *value on the first match.
static __always_inline int match_sdf(struct __sk_buff *skb, struct pkt *pk, struct sdf_rules *rs, __u32 *value)
{
	__u8 ip[20];
	__u8 pb[4];
	struct sdf_pkt p = {};

	if (pk->inner == 0)
		return 0;
	if (bpf_skb_load_bytes(skb, pk->inner, ip, sizeof(ip)) < 0)
		return 0;
	if ((ip[0] >> 4) != 4)
		return 0;
	__builtin_memcpy(&p.saddr, ip + 12, 4);
	__builtin_memcpy(&p.daddr, ip + 16, 4);
	p.proto = ip[9];
	// gtp5g reads the ports right after a 20-octet header, whatever IHL says.
	if (bpf_skb_load_bytes(skb, pk->inner + 20, pb, 4) == 0) {
		p.have_ports = 1;
		p.sport = (__u16)pb[0] << 8 | pb[1];
		p.dport = (__u16)pb[2] << 8 | pb[3];
	}

	// The rules are checked one by one at constant offsets into the map
	// value: a loop would step a pointer into it by a register, or past
	// its end on a mispredicted path, both refused without CAP_PERFMON.
	// barrier_var keeps clang from merging the sixteen loads of r->value
	// into one from an offset chosen per path.
	_Static_assert(MAX_SDF_RULES == 16, "one SDF_RULE per rule");
	__u32 n = rs->n;
	struct sdf_rule *r;

#define SDF_RULE(k)                                   \
	if (n <= k)                                   \
		return 0;                             \
	r = &rs->r[k];                                \
	barrier_var(r);                               \
	if (sdf_rule_match(r, &p)) {                  \
		*value = r->value;                    \
		return 1;                             \
	}
	SDF_RULE(0) SDF_RULE(1) SDF_RULE(2) SDF_RULE(3)
	SDF_RULE(4) SDF_RULE(5) SDF_RULE(6) SDF_RULE(7)
	SDF_RULE(8) SDF_RULE(9) SDF_RULE(10) SDF_RULE(11)
	SDF_RULE(12) SDF_RULE(13) SDF_RULE(14) SDF_RULE(15)
#undef SDF_RULE
	return 0;
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
