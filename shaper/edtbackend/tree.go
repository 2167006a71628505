package edtbackend

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// Quantum is every class's DRR quantum in bytes, as the HTB backend's
// default (the kernel's own, rate/10, is below a frame for small rates).
const Quantum = 12500

// Burst is every class's bucket in bytes, as the HTB backend's default
// (vishvananda's default, a frame plus a timer tick's worth, is too
// small for a guest's coarse timers).
const Burst = plan.DefaultBurst

// bufferTicks is the buffer that lets a class at rate send Burst at once,
// saturated at the kernel's largest.
func bufferTicks(rate uint64) uint32 {
	if t, ok := plan.BufferTicks(rate, Burst); ok {
		return t
	}
	return plan.MaxBufferTicks
}

// rootID is the root qdisc's handle.
func rootID() uint32 { return uint32(Major) << 16 }

// rootState is what the device's root qdisc says about the tree.
type rootState struct {
	ours     bool
	foreign  string // the root's kind and handle when it is someone else's
	overhead uint32
}

// readRoot reads link's root qdisc: ours (htb 6765:), the kernel's
// default (handle 0), or someone else's.
func (b *Backend) readRoot(link netlink.Link) (rootState, error) {
	r, err := b.conn.ReadRoot(link.Attrs().Index)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return rootState{}, nil
		}
		return rootState{}, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	switch {
	case r.Kind == "htb" && r.Handle == rootID():
		return rootState{ours: true, overhead: r.Overhead}, nil
	case r.Handle == 0: // the kernel's default root (noqueue, pfifo_fast, mq, ...)
		return rootState{}, nil
	}
	return rootState{foreign: fmt.Sprintf("%s %x:", r.Kind, r.Handle>>16)}, nil
}

// treeRequests are the writes that make link hold p's tree: root, classes
// and fq leaves, each create-or-replace (a second write of the same tree
// changes nothing the packets see). withRoot false keeps the root (ours,
// with the right size table).
func treeRequests(link netlink.Link, p *Plan, withRoot bool) ([]*nl.NetlinkRequest, error) {
	idx := link.Attrs().Index
	var reqs []*nl.NetlinkRequest
	if withRoot {
		reqs = append(reqs, htb.RootRequest(idx, rootID(), uint32(MinorDefault), p.Overhead))
	}
	for _, c := range p.Classes {
		parent := rootID()
		if c.Parent != 0 {
			parent = ClassID(c.Parent)
		}
		hc := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: idx, Handle: ClassID(c.Minor), Parent: parent},
			netlink.HtbClassAttrs{Rate: c.Rate, Ceil: c.Ceil, Quantum: Quantum, Prio: c.Prio})
		hc.Buffer, hc.Cbuffer = bufferTicks(c.Rate), bufferTicks(c.Ceil)
		req, err := htb.ClassRequest(hc, c.Overhead)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, req)
		if c.Minor != MinorLink {
			reqs = append(reqs, fqRequest(idx, c))
		}
	}
	return reqs, nil
}

// fqRequest creates or replaces class c's fq leaf, with the orphan mask
// that keeps the program's flows apart (vishvananda/netlink sends no
// orphan mask), c's packet limits (fq's own when 0: a replace that
// names none resets them) and its flow table size.
func fqRequest(ifindex int, c Class) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_REPLACE)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifindex), Handle: uint32(c.Minor) << 16, Parent: ClassID(c.Minor)})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("fq")))
	opts := nl.NewRtAttr(nl.TCA_OPTIONS, nil)
	opts.AddRtAttr(nl.TCA_FQ_ORPHAN_MASK, nl.Uint32Attr(OrphanMask))
	limit, flowLimit := leafLimits(c)
	opts.AddRtAttr(nl.TCA_FQ_PLIMIT, nl.Uint32Attr(limit))
	opts.AddRtAttr(nl.TCA_FQ_FLOW_PLIMIT, nl.Uint32Attr(flowLimit))
	opts.AddRtAttr(nl.TCA_FQ_BUCKETS_LOG, nl.Uint32Attr(leafBucketsLog(c)))
	req.AddData(opts)
	return req
}

// treeMatches reports whether link's classes and leaves are p's (rates in
// the kernel's bytes/s, fq leaves present), and returns the classes the
// device holds by id.
func (b *Backend) treeMatches(link netlink.Link, p *Plan) (bool, map[uint32]*netlink.HtbClass, error) {
	classes, err := b.h.ClassList(link, 0)
	if err != nil {
		return false, nil, fmt.Errorf("dev %s: list classes: %w", b.dev, err)
	}
	have := map[uint32]*netlink.HtbClass{}
	for _, c := range classes {
		if hc, ok := c.(*netlink.HtbClass); ok {
			have[hc.Handle] = hc
		}
	}
	qs, err := b.h.QdiscList(link)
	if err != nil {
		return false, nil, fmt.Errorf("dev %s: list qdiscs: %w", b.dev, err)
	}
	leaves := map[uint32]*netlink.Fq{}
	for _, q := range qs {
		if fq, ok := q.(*netlink.Fq); ok {
			leaves[fq.Parent] = fq
		}
	}
	if len(have) != len(p.Classes) {
		return false, have, nil
	}
	for _, c := range p.Classes {
		hc := have[ClassID(c.Minor)]
		if !sameRates(hc, c) || (c.Minor != MinorLink && !sameLeaf(leaves[ClassID(c.Minor)], c)) {
			return false, have, nil
		}
	}
	return true, have, nil
}

// sameRates reports whether the kernel's class hc (nil: none) has c's
// rate, ceil (the kernel holds bytes/s) and prio.
func sameRates(hc *netlink.HtbClass, c Class) bool {
	return hc != nil && hc.Rate == c.Rate/8 && hc.Ceil == c.Ceil/8 && hc.Prio == c.Prio
}

// leafLimits are the packet limits c's fq leaf holds.
func leafLimits(c Class) (limit, flowLimit uint32) {
	limit, flowLimit = c.FqLimit, c.FqFlowLimit
	if limit == 0 {
		limit = fqDefaultLimit
	}
	if flowLimit == 0 {
		flowLimit = fqDefaultFlowLimit
	}
	return limit, flowLimit
}

// sameLeaf reports whether fq (nil: none) is the leaf c's plan wants.
func sameLeaf(fq *netlink.Fq, c Class) bool {
	limit, flowLimit := leafLimits(c)
	return fq != nil && fq.PacketLimit == limit && fq.FlowPacketLimit == flowLimit && fq.Buckets == leafBucketsLog(c)
}

// leafBucketsLog is log2 of c's fq leaf's flow table size.
func leafBucketsLog(c Class) uint32 {
	if c.FqBucketsLog == 0 {
		return fqMinBucketsLog
	}
	return c.FqBucketsLog
}

// deleteRoot removes our root qdisc (and with it every class and leaf).
func (b *Backend) deleteRoot(link netlink.Link) error {
	q := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: rootID(), Parent: netlink.HANDLE_ROOT}, QdiscType: "htb"}
	if err := b.h.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("dev %s: delete root qdisc %x:: %w", b.dev, Major, err)
	}
	return nil
}

// accounting is what a root with that size table counts.
func accounting(overhead uint32) shaper.Accounting {
	if overhead > 0 {
		return shaper.AccountPacket
	}
	return shaper.AccountFrame
}
