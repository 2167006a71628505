// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// sdf_match.h: the SDF rule matcher the gtpu classifier (shaper/classify/gtpu)
// and the edt pacer (shaper/edt) share. On stock gtp5g the QFI on the wire
// does not tell a session's flows apart (free5GC sends every non-GBR flow
// with QFI 1): gtp5g finds a packet's PDR by matching the inner packet
// against the session's SDF filters in precedence order, and so does
// match_sdf, against a table of the session's rules keyed by the TEID.
// What a matching rule yields (a class id, a mark, a flow id) is the
// caller's.
//
// The code loads with CAP_BPF and CAP_NET_ADMIN alone: without CAP_PERFMON
// the verifier refuses pointer arithmetic whose offset is a register or
// differs between paths, refuses a pointer that steps past a map value's
// end even on a path only a mispredicted branch takes, and follows those
// mispredicted paths too; so the rules are written out one by one at
// constant offsets rather than looped over.

#ifndef GTPQOS_SDF_MATCH_H
#define GTPQOS_SDF_MATCH_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gtpu_parse.h"

#ifndef READ_ONCE
#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#endif

// sdf_rule is one PDR's SDF filter, as gtp5g matches it against the
// inner IPv4 packet (pdr.c sdf_filter_match): protocol (0xff: any),
// source and destination address under their masks, and, when any port
// range is given, the ports read right after a 20-octet IPv4 header.
// Addresses are in network byte order. ue, when not 0, is the PDR's UE
// address: the inner destination downlink, the inner source uplink.
// value is what a match yields: the gtpu classifier's class id (downlink)
// or mark (uplink), the edt pacer's flow id; 0: no flow (the default
// class, unmarked uplink).
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

#endif
