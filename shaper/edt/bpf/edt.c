// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// edt.c: an earliest-departure-time (EDT) pacer for a UPF's egress, as a
// clsact egress cls_bpf program in direct-action mode. Per packet it
//
//   - finds the QoS flow by skb->mark (bits 0-23, MARK_MASK: the patched
//     gtp5g's flow mark): in flows under the mark itself when that flow's
//     id is one of its marks (FLOW_ID_IS_MARK: one lookup, the common
//     case), else through marks (mark -> flow id) and flows; a
//     packet whose mark names no flow (stock gtp5g marks nothing) is
//     parsed as GTP-U (shaper/bpf/gtpu_parse.h, the gtpu classifier's
//     parser) and found, as the gtpu classifier finds its class, by the
//     first of its session's SDF rules (rules: TEID -> rules valued in
//     flow ids; shaper/bpf/sdf_match.h) its inner packet matches, else by
//     its (TEID, QFI) through teids (-> flow id); a non-first fragment by
//     its first fragment's flow (frags);
//   - computes the departure time t from the flow's MBR clock and, for a
//     non-GBR flow, its session's AMBR clock: t = max(now, clocks). Each
//     clock is a token bucket's (GCRA): it may lag now (a flow's MBR
//     clock: the time its packet leaves) by the time its
//     burst (config.burst bytes, 32 KiB from the backend: an HTB class's
//     burst) takes at its rate (*credit_ns, which user space writes with
//     the rate: no division per packet), so a flow or session that was idle or
//     below its rate may send that burst at once, as an HTB class may; a
//     greedy one never lags and is paced exactly, and so, but for a few
//     packets, is a flow whose packets its session's AMBR refused
//     (REFUSED_CREDIT);
//   - drops the packet (TC_ACT_SHOT) when t lies beyond now + the flow's
//     delay budget, rather than queueing it for seconds; a packet bound
//     for the non-GBR class also when the flow would have more packets
//     scheduled ahead than that class's fq leaf keeps for one flow
//     (config.flow_ahead): fq would drop them after the clocks were
//     charged, and the flow would fall below its MBR;
//   - meters a GBR flow with a second clock at the GBR: a packet within
//     the GBR goes to the guaranteed shared class, the rest (up to MBR) to
//     the flow's non-GBR class. Both leave at t: one clock orders a flow's
//     departures, whatever class a packet is put in. The GBR clock has the
//     MBR clock's idle credit, so a burst the MBR clock lets leave after
//     a stall is guaranteed too, as an HTB class's burst is;
//   - sets skb->priority to that class id (HTB takes it as the class),
//     skb->hash to the flow's hash (fq sees each QoS flow as a flow of its
//     own; forwarded packets have no socket) and skb->tstamp to t as a
//     CLOCK_MONOTONIC delivery time (bpf_skb_set_tstamp, 5.18+), which fq
//     holds the packet until and a veth hop into another netns keeps. A
//     packet metered into the guaranteed class gets that class's id as its
//     hash instead: the class is one fq flow, whose packets fq keeps in
//     departure order. The meter keeps the class within the GBRs, so fq's
//     round robin has nothing to share out there, and where the class
//     fell behind (the host stalled) departure order catches each flow up
//     in proportion to its GBR, which a round robin between flows, without
//     weights, cannot; nor does fq keep a flow's state for every GBR flow.
//
// A packet's size is the user's IP packet: skb->len less `overhead` (the
// encapsulation around it at this qdisc, 58 on an Ethernet IPv4 N3, 14 on
// N6), at least 1 byte: the same bytes the HTB backend's size table
// counts under packet accounting (shaper/accounting.go).
//
// Concurrency: two CPUs may send packets of one flow or one session at
// once. A clock is read, compared and advanced as one step, so the clocks
// sit next to a bpf_spin_lock that guards them and the flow's counters
// (which then need no atomics of their own). A program may hold one lock
// at a time, and a non-GBR flow's departure needs its own clock and its
// session's together: so the clocks and counters of a flow under an AMBR
// are guarded by its session's lock, those of any other flow by its own.
// The config fields (written whole by user space) are read unlocked; the
// drop counters are atomic adds after the lock is released.
//
// The program loads with CAP_BPF and CAP_NET_ADMIN alone: without
// CAP_PERFMON the verifier refuses pointer arithmetic whose offset differs
// between paths, so code that clang could fold into such a select (one
// counter store for two paths, one class load for two fields) is kept
// apart on purpose.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "gtpu_parse.h"
#include "sdf_match.h"

#define MARK_MASK 0x00FFFFFF
#define NSEC_PER_SEC 1000000000ULL

// Bytes of skb->len that are not the user's packet. Set by the loader.
volatile const __u32 overhead = 0;
// Bytes in front of the outer IPv4 header (GTP-U parsing): 14 on
// Ethernet, 0 on an L3 device. Set by the loader.
volatile const __u32 l2_len = 14;
// Tests only: copy the hash set, the flow id and the class into cb[0..2],
// which BPF_PROG_TEST_RUN hands back (it does not hand back skb->hash).
volatile const __u32 echo = 0;

// flow.flags
#define FLOW_AMBR 1       // the flow is under its session's AMBR clock
#define FLOW_ID_IS_MARK 2 // the flow's id is one of its marks: flows[mark] is it

// flow: one QoS flow. The first block is written by user space only; the
// clocks and counters below it are the program's, under lock.
struct flow {
	struct bpf_spin_lock lock; // see Concurrency above
	__u32 session;      // session id (sessions map) when FLOW_AMBR
	__u64 mbr_bps;      // 0: no MBR clock
	__u64 gbr_bps;      // 0: a non-GBR flow
	__u64 budget_ns;    // horizon: drop when t > now + budget_ns
	__u64 gbr_burst_ns; // how far the GBR clock may run ahead of t
	__u64 mbr_credit_ns; // the MBR clock's idle credit: config.burst at the MBR
	__u64 gbr_credit_ns; // the GBR meter's idle credit: config.burst at the GBR
	__u32 class_id;     // non-GBR shared class (excess of a GBR flow)
	__u32 gbr_class_id; // guaranteed shared class
	__u32 hash;         // skb->hash (0: left alone)
	__u32 flags;
	// state
	__u64 mbr_clock; // earliest departure of the flow's next packet
	__u64 gbr_clock; // where the GBR meter stands
	__u64 avg_len;   // the flow's mean packet size (user bytes, a moving average)
	__u64 pkts;      // passed (guaranteed + excess)
	__u64 bytes;
	__u64 gbr_pkts; // of those, within the GBR (guaranteed class)
	__u64 gbr_bytes;
	__u64 drops; // beyond the horizon (atomic adds, outside the lock)
	__u64 drop_bytes;
};

// session: one PDU session's AMBR over its non-GBR flows.
struct session {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 ambr_bps;  // 0: no AMBR clock
	__u64 clock;     // earliest departure of the session's next packet
	__u64 credit_ns; // the clock's idle credit: config.burst at the AMBR
};

// config[0], written by user space.
struct edt_config {
	__u32 default_class; // priority for packets no flow claims (0: leave)
	__u32 overhead;      // the loader's `overhead`, for a process that opens the pins
	__u32 l2_len;        // the loader's `l2_len`, likewise
	__u32 burst;         // idle credit of every clock, bytes (0: none); user space writes each flow's and session's credit from it
	__u32 flow_ahead;    // most packets of a flow scheduled ahead in the non-GBR leaf (0: no bound)
	__u32 code[2];       // the loader's fingerprint of this program's instructions (user space only)
};

// stats[0], per CPU: packets no flow claims.
struct edt_stats {
	__u64 unknown_pkts; // neither a mark nor (TEID, QFI) names a flow
	__u64 unknown_bytes;
	__u64 stale_pkts;      // mark names a flow id that flows lacks
	__u64 no_session_pkts; // a FLOW_AMBR flow whose session is missing
	__u64 not_ip_pkts;     // paced by a plain tstamp write (not IP)
	__u64 gtpu_pkts;       // found by (TEID, QFI), no mark naming a flow
	__u64 frag_pkts;       // non-first fragments that followed their first
	__u64 sdf_pkts;        // of gtpu_pkts, found by an SDF rule
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); // set by the loader
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, __u32);
} marks SEC(".maps");

// (TEID, QFI) of a GTP-U packet -> flow id: stock gtp5g's packets,
// which carry no mark.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); // set by the loader
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct flow_key);
	__type(value, __u32);
} teids SEC(".maps");

// TEID -> the SDF rules of the session whose downlink packets carry it, in
// gtp5g's order (sdf_match.h), each rule's value a flow id (0: none, the
// default class). A TEID without an entry is found by (TEID, QFI) alone.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); // set by the loader
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct sdf_rules);
} rules SEC(".maps");

// The outer datagram of a first fragment found by its GTP-U header -> its
// flow id, for the fragments after it (they carry no GTP-U header).
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct frag_key);
	__type(value, __u32);
} frags SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct flow);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct session);
} sessions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct edt_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct edt_stats);
} stats SEC(".maps");

// found[0], per CPU: the flow id by_gtpu found for the packet at hand. A
// map value rather than a stack variable: a loader without CAP_PERFMON may
// test a pointer to a map value for NULL, not one to the stack, and 6.1's
// verifier refuses a 4-byte stack key where a spilled pointer was.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} found SEC(".maps");

// tx_ns is the time len bytes take at bps bit/s (0 without a rate).
// An skb is at most a few hundred KiB (BIG TCP GSO: 512 KiB), so len * 8e9
// stays far below 2^64.
static __always_inline __u64 tx_ns(__u64 len, __u64 bps)
{
	return bps ? len * 8 * NSEC_PER_SEC / bps : 0;
}

// Map keys come from map values or .rodata, not the stack, except the
// mark: a loader without CAP_PERFMON on 6.1 has the verifier refuse a
// 4-byte key that clang stores into a stack slot a spilled pointer held
// ("attempt to corrupt spilled pointer on stack").
static const __u32 zero = 0;

static __always_inline int unclaimed(struct __sk_buff *skb, int stale)
{
	struct edt_stats *st = bpf_map_lookup_elem(&stats, &zero);
	struct edt_config *cfg = bpf_map_lookup_elem(&config, &zero);

	if (st) {
		if (stale)
			st->stale_pkts++;
		st->unknown_pkts++;
		st->unknown_bytes += skb->len;
	}
	if (cfg && cfg->default_class)
		skb->priority = cfg->default_class;
	return TC_ACT_OK;
}

static __always_inline void count(__u32 what)
{
	struct edt_stats *st = bpf_map_lookup_elem(&stats, &zero);

	if (!st)
		return;
	// One store per case, each at its own constant offset.
	if (what == 0)
		st->no_session_pkts++;
	else if (what == 1)
		st->not_ip_pkts++;
	else if (what == 2)
		st->gtpu_pkts++;
	else if (what == 3)
		st->frag_pkts++;
	else
		st->sdf_pkts++;
}

// by_sdf matches a GTP-U packet against its session's SDF rules (keyed by
// TEID alone, so whatever QFI the wire carries), as gtp5g finds its PDR:
// the first rule the inner packet matches decides. It returns 1 when one
// did, its flow id (0: a rule of no flow, the default class) then in *id.
static __always_inline int by_sdf(struct __sk_buff *skb, struct flow_key *key, struct pkt *pk, __u32 *id)
{
	struct sdf_rules *rs = bpf_map_lookup_elem(&rules, &key->teid);

	if (!rs)
		return 0;
	if (!match_sdf(skb, pk, rs, id))
		return 0;
	count(4);
	return 1;
}

// by_gtpu finds an unmarked packet's flow id from its GTP-U header: the
// session's SDF rules (by_sdf), then (TEID, QFI) through teids; a first
// fragment leaves its flow for the fragments after it, which take it from
// frags. The id goes into *id, the CPU's found slot, and is returned (0:
// no flow). Each lookup's result is tested once, right after it: a
// pointer tested for NULL again later has the verifier of a loader without
// CAP_PERFMON follow the mispredicted branch with the NULL (6.1: "invalid
// mem access 'scalar'").
static __always_inline __u32 by_gtpu(struct __sk_buff *skb, __u32 *id)
{
	struct flow_key key = {};
	struct pkt pk = {};
	int r = gtpu_parse(skb, l2_len, &key, &pk);

	*id = 0;
	if (r == PARSE_NOT_GTP) {
		if (!pk.later_frag)
			return 0;
		__u32 *first = bpf_map_lookup_elem(&frags, &pk.frag);
		if (!first)
			return 0;
		*id = *first;
		count(3);
		return *id;
	}
	if (!by_sdf(skb, &key, &pk, id)) {
		if (r != PARSE_GTP_QFI)
			return 0;
		__u32 *k = bpf_map_lookup_elem(&teids, &key);
		if (!k)
			return 0;
		*id = *k;
	}
	if (*id == 0)
		return 0;
	count(2);
	if (pk.first_frag)
		bpf_map_update_elem(&frags, &pk.frag, id, BPF_ANY);
	return *id;
}

// Packets a flow keeps as credit when its session's AMBR refuses one of
// them (advance): the time it was refused is not idle time, so it is no
// credit; idle time still is, up to the burst.
#define REFUSED_CREDIT 4

// Verdicts of advance().
#define PASS_EXCESS 0 // the flow's non-GBR class
#define PASS_GBR 1    // the guaranteed class
#define DROP 2

// charge is a token bucket's clock after a packet that takes d ns is
// charged to it at time at: the earliest the next packet may leave as far
// as this clock goes. The clock may lag `at` by burst ns (credit left from
// idle time), never more; with no credit it is max(clock, at) + d, pure
// pacing. (GCRA: the clock is the theoretical arrival time less the burst
// tolerance.) A flow's MBR clock is charged at the packet's departure, so
// that its departures, which its receiver counts, keep to its MBR when
// its session's AMBR clock decides when they leave. The session's clock
// is charged at now instead: a flow held back by its own MBR must not push
// its session's AMBR clock to that later time, which would hold the
// session's other flows behind it while the session is under its AMBR.
// The packet leaves at the latest of the clocks (as Carousel combines
// rate limits).
static __always_inline __u64 charge(__u64 clock, __u64 at, __u64 burst, __u64 d)
{
	__u64 floor = at > burst ? at - burst : 0;

	return (clock > floor ? clock : floor) + d;
}

// Per packet: its time at each clock's rate (d_*, computed outside the
// lock) and each clock's credit (b_*: the burst's time at that rate, a
// constant of the flow or session that user space writes with its rate).
struct cost {
	__u64 d_mbr, d_gbr, d_ambr;
	__u64 b_mbr, b_gbr, b_ambr;
	__u64 mbr, ambr; // the rates (bit/s; 0: no clock)
	__u64 ahead;     // config.flow_ahead
};

// excess_horizon is how far ahead a packet bound for the non-GBR class's
// leaf may leave: its budget, or less when c->ahead packets of the flow
// (the leaf's fq flow_limit, less a few for packets due but not yet
// dequeued) would span less time. A flow's packets leave at least the
// larger of their MBR and AMBR times apart, so about ahead of them lie
// within ahead such times of a packet of the flow's mean size avg (not
// this packet's: a small packet among large ones, as TCP sends, must not
// find the horizon shrunk to its own size). The guaranteed class's leaf
// holds a whole horizon and needs no such bound.
static __always_inline __u64 excess_horizon(__u64 budget, const struct cost *c, __u64 avg)
{
	__u64 g_mbr = tx_ns(avg, c->mbr), g_ambr = tx_ns(avg, c->ambr);
	__u64 span = (g_mbr > g_ambr ? g_mbr : g_ambr) * c->ahead;

	return span && span < budget ? span : budget;
}

// advance is one packet's arithmetic on its flow's clocks (and its session's,
// when s is not NULL), with the lock that guards them held by the caller.
// It stores the departure time in *t: the latest of now and the clocks.
static __always_inline int advance(struct flow *f, struct session *s, __u64 now, __u64 len,
				   const struct cost *c, __u64 *t)
{
	__u64 dep = now;
	__u64 horizon = f->budget_ns;
	int verdict = PASS_EXCESS;

	if (f->mbr_clock > dep)
		dep = f->mbr_clock;
	if (s && s->clock > dep)
		dep = s->clock;
	__u64 avg = f->avg_len ? f->avg_len : len;
	if (f->gbr_bps && f->gbr_clock <= dep + f->gbr_burst_ns)
		verdict = PASS_GBR;
	else if (c->ahead)
		horizon = excess_horizon(horizon, c, avg);
	if (dep - now > horizon) {
		// A refused packet shows the flow was not idle: the time its
		// session's AMBR clock held it back is no idle credit (its MBR
		// clock stands at dep otherwise), or it would leave above its
		// MBR once the session lets it. It keeps REFUSED_CREDIT packets
		// to take the session's next slots after losing some to flows
		// not held by an MBR of their own. The clock stays within the
		// flow's own horizon: the session's clock may lie further ahead
		// (another flow's budget) and be reset by a new AMBR.
		if (c->mbr) {
			__u64 keep = c->d_mbr * REFUSED_CREDIT;
			__u64 at = dep > keep ? dep - keep : 0;
			if (at > now + horizon)
				at = now + horizon;
			if (f->mbr_clock < at)
				f->mbr_clock = at;
		}
		return DROP; // counted by the caller
	}

	f->avg_len = avg - (avg >> 3) + (len >> 3); // weight 1/8

	if (c->mbr)
		f->mbr_clock = charge(f->mbr_clock, dep, c->b_mbr, c->d_mbr);
	if (s)
		s->clock = charge(s->clock, now, c->b_ambr, c->d_ambr);
	if (verdict == PASS_GBR) {
		f->gbr_clock = charge(f->gbr_clock, dep, c->b_gbr, c->d_gbr);
		f->gbr_pkts++;
		f->gbr_bytes += len;
	}
	f->pkts++;
	f->bytes += len;
	*t = dep;
	return verdict;
}

// by_mark finds the flow a mark names in one lookup when the flow's id is
// that mark: marks are unique to a flow, so a flow under id m whose marks
// include m is the one m names. NULL: look the mark up in marks.
static __always_inline struct flow *by_mark(__u32 *mark)
{
	struct flow *f = bpf_map_lookup_elem(&flows, mark);

	if (f && (READ_ONCE(f->flags) & FLOW_ID_IS_MARK))
		return f;
	return NULL;
}

SEC("tc")
int edt_egress(struct __sk_buff *skb)
{
	__u32 mark = skb->mark & MARK_MASK;
	__u32 fid = mark;
	struct flow *f = NULL;
	if (mark)
		f = by_mark(&mark);
	if (!f) {
		__u32 *id = NULL;
		if (mark)
			id = bpf_map_lookup_elem(&marks, &mark);
		if (!id) {
			// The id found from the GTP-U header lives in a map value
			// (the flows map's key, the frags map's value), not on the
			// stack.
			id = bpf_map_lookup_elem(&found, &zero);
			if (!id)
				return unclaimed(skb, 0);
			if (!by_gtpu(skb, id))
				return unclaimed(skb, 0);
		}
		fid = *id;
		f = bpf_map_lookup_elem(&flows, id);
		if (!f)
			return unclaimed(skb, 1);
	}

	__u64 len = skb->len > overhead ? skb->len - overhead : 1;
	__u64 now = bpf_ktime_get_ns();
	struct edt_config *cfg = bpf_map_lookup_elem(&config, &zero);
	__u64 ahead = cfg ? READ_ONCE(cfg->flow_ahead) : 0;
	__u64 mbr = READ_ONCE(f->mbr_bps);
	__u64 gbr = READ_ONCE(f->gbr_bps);
	struct cost c = {
		.d_mbr = tx_ns(len, mbr),
		.d_gbr = tx_ns(len, gbr),
		.b_mbr = READ_ONCE(f->mbr_credit_ns),
		.b_gbr = READ_ONCE(f->gbr_credit_ns),
		.mbr = mbr,
		.ahead = ahead,
	};
	__u64 t = now;
	int verdict;

	struct session *s = NULL;
	if (READ_ONCE(f->flags) & FLOW_AMBR) {
		s = bpf_map_lookup_elem(&sessions, &f->session);
		if (!s)
			count(0);
	}
	if (s) {
		// A flow under its session's AMBR keeps its clocks under the
		// session's lock: one section takes both clocks at once.
		__u64 ambr = READ_ONCE(s->ambr_bps);
		c.d_ambr = tx_ns(len, ambr);
		c.ambr = ambr;
		c.b_ambr = READ_ONCE(s->credit_ns);
		bpf_spin_lock(&s->lock);
		verdict = advance(f, s, now, len, &c, &t);
		bpf_spin_unlock(&s->lock);
	} else {
		bpf_spin_lock(&f->lock);
		verdict = advance(f, NULL, now, len, &c, &t);
		bpf_spin_unlock(&f->lock);
	}
	if (verdict == DROP) {
		// Atomics, outside the lock: code shaped unlike the pass path's
		// counting, so clang cannot merge the two into one store at an
		// offset chosen per path, which the verifier refuses to a
		// loader without CAP_PERFMON.
		__sync_fetch_and_add(&f->drops, 1);
		__sync_fetch_and_add(&f->drop_bytes, len);
		return TC_ACT_SHOT;
	}

	// Both loads are volatile, so clang keeps them apart rather than load
	// from an address chosen per path (refused without CAP_PERFMON).
	__u32 cls = READ_ONCE(f->class_id);
	__u32 gcls = READ_ONCE(f->gbr_class_id);
	__u32 hash = READ_ONCE(f->hash);
	if (verdict == PASS_GBR) {
		// The guaranteed class is one fq flow (see the top of the file).
		cls = gcls;
		hash = gcls;
	}
	if (cls)
		skb->priority = cls;
	if (hash)
		bpf_set_hash(skb, hash);
	if (bpf_skb_set_tstamp(skb, t, BPF_SKB_TSTAMP_DELIVERY_MONO) < 0) {
		// Not IPv4/IPv6 (the helper refuses other protocols).
		skb->tstamp = t;
		count(1);
	}
	if (echo) {
		skb->cb[0] = hash;
		skb->cb[1] = fid;
		skb->cb[2] = cls;
	}
	return TC_ACT_OK;
}

char _license[] SEC("license") = "Dual MIT/GPL";
