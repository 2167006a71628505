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
// Parsing follows TS 29.281 (GTP-U header, optional fields when any of
// E/S/PN is set, extension header chain in 4-octet units with the next type
// in the last octet) and TS 38.415 (PDU Session Container, type 0x85: QFI
// is the low 6 bits of its second octet).

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_P_IP_BE bpf_htons(0x0800)
#define IPPROTO_UDP_ 17
#define GTPU_PORT 2152
#define GTP_TPDU 0xff
#define GTP_FLAG_E 0x04
#define GTP_FLAG_S 0x02
#define GTP_FLAG_PN 0x01
#define EXT_PDU_SESSION 0x85
#define MAX_EXT_HDRS 8
// The gtp5g patch's QoS mark field (gtp5g-patch/ABI.md, shaper.MarkMask):
// bits 24-31 of skb->mark are not ours (bit 31: framed route).
#define MARK_MASK 0x00FFFFFF

// Link-layer header length in front of the IPv4 header: 14 on Ethernet,
// 0 on an L3 device. Rewritten by the loader before the program loads.
volatile const __u32 l2_len = 14;

// flow_key identifies a QoS flow on N3. teid is in host byte order;
// teid == 0 means "any TEID" (QFI-only entries, looked up on a miss).
struct flow_key {
	__u32 teid;
	__u8 qfi;
	__u8 pad[3];
};

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

// Per-CPU packet counters: enum stat for gtpu_egress, STAT_MAX + enum stat
// for gtpu_ingress.
enum stat {
	STAT_NOT_GTP = 0,  // not IPv4/UDP/2152/GTPv1: untouched
	STAT_HIT = 1,      // (TEID, QFI) or QFI-only entry found
	STAT_MISS = 2,     // GTP-U, no entry: default class / no mark
	STAT_NO_QFI = 3,   // GTP-U without a usable PDU Session Container
	STAT_MAX = 4,
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

enum parse_result {
	PARSE_NOT_GTP = 0, // leave the packet alone
	PARSE_GTP = 1,     // GTP-U, TEID known, QFI unknown
	PARSE_GTP_QFI = 2, // GTP-U with TEID and QFI
};

// parse reads TEID and QFI of an IPv4/UDP/GTP-U packet.
static __always_inline int parse(struct __sk_buff *skb, struct flow_key *key)
{
	__u8 ip[20];
	__u8 udp[8];
	__u8 gtp[12];
	__u32 off = l2_len;

	if (skb->protocol != ETH_P_IP_BE)
		return PARSE_NOT_GTP;
	if (bpf_skb_load_bytes(skb, off, ip, sizeof(ip)) < 0)
		return PARSE_NOT_GTP;
	if ((ip[0] >> 4) != 4)
		return PARSE_NOT_GTP;
	__u32 ihl = (ip[0] & 0x0f) * 4;
	if (ihl < 20)
		return PARSE_NOT_GTP;
	if (ip[9] != IPPROTO_UDP_)
		return PARSE_NOT_GTP;
	// A non-first fragment carries no UDP header.
	if (((ip[6] & 0x1f) | ip[7]) != 0)
		return PARSE_NOT_GTP;
	off += ihl;
	if (bpf_skb_load_bytes(skb, off, udp, sizeof(udp)) < 0)
		return PARSE_NOT_GTP;
	if (((__u16)udp[2] << 8 | udp[3]) != GTPU_PORT)
		return PARSE_NOT_GTP;
	off += 8;
	if (bpf_skb_load_bytes(skb, off, gtp, 8) < 0)
		return PARSE_NOT_GTP;
	// Version 1, protocol type GTP (not GTP').
	if ((gtp[0] & 0xf0) != 0x30)
		return PARSE_NOT_GTP;
	key->teid = (__u32)gtp[4] << 24 | (__u32)gtp[5] << 16 |
		    (__u32)gtp[6] << 8 | gtp[7];
	if (gtp[1] != GTP_TPDU)
		return PARSE_GTP;
	if (!(gtp[0] & (GTP_FLAG_E | GTP_FLAG_S | GTP_FLAG_PN)))
		return PARSE_GTP;
	// Sequence number (2), N-PDU number (1), next extension type (1):
	// present if any of E/S/PN is set; the next type counts only with E.
	if (bpf_skb_load_bytes(skb, off + 8, gtp + 8, 4) < 0)
		return PARSE_GTP;
	if (!(gtp[0] & GTP_FLAG_E))
		return PARSE_GTP;
	__u8 next = gtp[11];
	off += 12;

	for (int i = 0; i < MAX_EXT_HDRS; i++) {
		__u8 ext[3];

		if (next == 0)
			return PARSE_GTP;
		if (bpf_skb_load_bytes(skb, off, ext, 1) < 0)
			return PARSE_GTP;
		__u32 len = (__u32)ext[0] * 4;
		if (len == 0)
			return PARSE_GTP;
		if (next == EXT_PDU_SESSION) {
			if (bpf_skb_load_bytes(skb, off, ext, 3) < 0)
				return PARSE_GTP;
			key->qfi = ext[2] & 0x3f;
			return PARSE_GTP_QFI;
		}
		// Next extension type is the last octet of this header.
		if (bpf_skb_load_bytes(skb, off + len - 1, &next, 1) < 0)
			return PARSE_GTP;
		off += len;
	}
	return PARSE_GTP;
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

SEC("tc")
int gtpu_egress(struct __sk_buff *skb)
{
	struct flow_key key = {};
	int r = parse(skb, &key);

	if (r == PARSE_NOT_GTP) {
		count(STAT_NOT_GTP);
		return TC_ACT_UNSPEC;
	}
	if (r == PARSE_GTP_QFI) {
		__u32 *cls = lookup(&dl_class, &key);
		if (cls) {
			count(STAT_HIT);
			skb->priority = *cls;
			return TC_ACT_OK;
		}
		count(STAT_MISS);
	} else {
		count(STAT_NO_QFI);
	}
	__u32 zero = 0;
	struct gtpu_config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (cfg && cfg->dl_default_class)
		skb->priority = cfg->dl_default_class;
	return TC_ACT_OK;
}

SEC("tc")
int gtpu_ingress(struct __sk_buff *skb)
{
	struct flow_key key = {};
	int r = parse(skb, &key);

	if (r == PARSE_NOT_GTP) {
		count(STAT_MAX + STAT_NOT_GTP);
		return TC_ACT_UNSPEC;
	}
	if (r == PARSE_GTP_QFI) {
		__u32 *mark = lookup(&ul_mark, &key);
		if (mark) {
			count(STAT_MAX + STAT_HIT);
			skb->mark = *mark;
			return TC_ACT_OK;
		}
		count(STAT_MAX + STAT_MISS);
	} else {
		count(STAT_MAX + STAT_NO_QFI);
	}
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
