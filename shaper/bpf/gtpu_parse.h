// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// gtpu_parse.h: the GTP-U parser the gtpu classifier (shaper/classify/gtpu)
// and the edt pacer (shaper/edt) share. It reads outer IPv4 -> UDP 2152 ->
// GTP-U -> PDU Session Container and yields the packet's (TEID, QFI), its
// outer datagram's identity (for fragments) and where the T-PDU starts.
//
// Parsing follows TS 29.281 (GTP-U header, optional fields when any of
// E/S/PN is set, extension header chain in 4-octet units with the next type
// in the last octet) and TS 38.415 (PDU Session Container, type 0x85: QFI
// is the low 6 bits of its second octet).
//
// The code loads with CAP_BPF and CAP_NET_ADMIN alone. Without CAP_PERFMON
// the verifier refuses pointer arithmetic whose offset is a register or
// differs between paths and follows mispredicted paths too: so every field
// is read with bpf_skb_load_bytes at an offset that is a scalar, never a
// packet pointer, and the extension header walk is written out step by
// step rather than looped over.

#ifndef GTPQOS_GTPU_PARSE_H
#define GTPQOS_GTPU_PARSE_H

#include <linux/bpf.h>
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

// flow_key identifies a QoS flow on N3. teid is in host byte order.
struct flow_key {
	__u32 teid;
	__u8 qfi;
	__u8 pad[3];
};

// frag_key names one outer IPv4 datagram: its non-first fragments carry
// no UDP or GTP-U header, so they take what the first fragment got.
struct frag_key {
	__u32 saddr;
	__u32 daddr;
	__u16 id;
	__u8 proto;
	__u8 dir; // the caller's: which hook stored the entry
};

enum parse_result {
	PARSE_NOT_GTP = 0, // leave the packet alone
	PARSE_GTP = 1,     // GTP-U, TEID known, QFI unknown
	PARSE_GTP_QFI = 2, // GTP-U with TEID and QFI
};

// pkt is what gtpu_parse learnt about a packet besides its key.
struct pkt {
	struct frag_key frag;
	__u8 first_frag; // offset 0 with more fragments to come
	__u8 later_frag; // offset != 0
	__u32 inner;     // offset of the T-PDU (0: unknown)
};

// gtpu_ext_hdr reads the extension header of type *next at *off: the QFI
// of the first PDU Session Container, and the next type from its last
// octet. It returns 1 where the walk ends: at the chain's end (pk->inner
// set), or at a header that cannot be read.
static __always_inline int gtpu_ext_hdr(struct __sk_buff *skb, struct flow_key *key, struct pkt *pk,
					__u32 *off, __u8 *next, int *r)
{
	__u8 ext[3];

	if (*next == 0) {
		pk->inner = *off;
		return 1;
	}
	if (bpf_skb_load_bytes(skb, *off, ext, 1) < 0)
		return 1;
	__u32 len = (__u32)ext[0] * 4;
	if (len == 0)
		return 1;
	if (*next == EXT_PDU_SESSION && *r == PARSE_GTP) {
		if (bpf_skb_load_bytes(skb, *off, ext, 3) < 0)
			return 1;
		key->qfi = ext[2] & 0x3f;
		*r = PARSE_GTP_QFI;
	}
	// Next extension type is the last octet of this header.
	if (bpf_skb_load_bytes(skb, *off + len - 1, next, 1) < 0)
		return 1;
	*off += len;
	return 0;
}

// gtpu_parse reads TEID and QFI of an IPv4/UDP/GTP-U packet whose IPv4
// header starts l2_len bytes into the frame.
static __always_inline int gtpu_parse(struct __sk_buff *skb, __u32 l2_len, struct flow_key *key, struct pkt *pk)
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
	__builtin_memcpy(&pk->frag.saddr, ip + 12, 4);
	__builtin_memcpy(&pk->frag.daddr, ip + 16, 4);
	pk->frag.id = (__u16)ip[4] << 8 | ip[5];
	pk->frag.proto = ip[9];
	// A non-first fragment carries no UDP header.
	if (((ip[6] & 0x1f) | ip[7]) != 0) {
		pk->later_frag = 1;
		return PARSE_NOT_GTP;
	}
	pk->first_frag = (ip[6] & 0x20) != 0;
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
	if (!(gtp[0] & (GTP_FLAG_E | GTP_FLAG_S | GTP_FLAG_PN))) {
		pk->inner = off + 8;
		return PARSE_GTP;
	}
	// Sequence number (2), N-PDU number (1), next extension type (1):
	// present if any of E/S/PN is set; the next type counts only with E.
	if (bpf_skb_load_bytes(skb, off + 8, gtp + 8, 4) < 0)
		return PARSE_GTP;
	if (!(gtp[0] & GTP_FLAG_E)) {
		pk->inner = off + 12;
		return PARSE_GTP;
	}
	__u8 next = gtp[11];
	off += 12;
	int r = PARSE_GTP;

	// Walk the whole chain: the T-PDU starts after its last header. The
	// MAX_EXT_HDRS steps are written out: a loader without CAP_PERFMON has
	// the verifier follow each branch's speculated way too, and on a loop
	// that goes on past its bound, counting down without end.
	_Static_assert(MAX_EXT_HDRS == 8, "one EXT_HDR per header");
#define EXT_HDR gtpu_ext_hdr(skb, key, pk, &off, &next, &r)
	if (EXT_HDR || EXT_HDR || EXT_HDR || EXT_HDR ||
	    EXT_HDR || EXT_HDR || EXT_HDR || EXT_HDR)
		return r;
#undef EXT_HDR
	if (next == 0)
		pk->inner = off;
	return r;
}

#endif
