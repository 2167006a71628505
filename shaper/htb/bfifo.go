package htb

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// fifoLeaf is a bfifo sized by the class's delay budget (Class.QueueLimit
// bytes). A class without a limit (a tree not made by Plan) keeps HTB's
// built-in pfifo, whose limit is the device's txqueuelen in packets: at
// 6 Mbit/s 1,000 packets of 1228 bytes wait 1.6 s.
type fifoLeaf struct{}

// bfifoQdisc is a bfifo with its byte limit: vishvananda/netlink v1.3.1
// neither sends nor reads a fifo's limit, so gtpqos's own route-netlink
// socket does (bfifoReq, readFifoLimits).
type bfifoQdisc struct {
	netlink.QdiscAttrs
	Limit uint32
}

func (q *bfifoQdisc) Attrs() *netlink.QdiscAttrs { return &q.QdiscAttrs }
func (q *bfifoQdisc) Type() string               { return "bfifo" }

func (fifoLeaf) want(link netlink.Link, t *plan.Tree, c plan.Class) netlink.Qdisc {
	if c.QueueLimit == 0 {
		return nil
	}
	return &bfifoQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Parent: t.ClassID(c.Minor),
		Handle: netlink.MakeHandle(c.Minor, 0)}, Limit: c.QueueLimit}
}

// matches: the bfifo of the class's limit. A class without a limit (a
// spare, which carries nothing) takes HTB's built-in pfifo, which is not
// listed (or has no handle), or the bfifo of the flow it held last: a
// listed pfifo was added by hand, with its own limit, and is drift.
func (fifoLeaf) matches(_ netlink.Link, _ *plan.Tree, c plan.Class, q netlink.Qdisc) bool {
	if c.QueueLimit == 0 {
		_, ours := q.(*bfifoQdisc)
		return q == nil || (q.Type() == "pfifo" && q.Attrs().Handle == 0) || ours && q.Attrs().Handle == netlink.MakeHandle(c.Minor, 0)
	}
	b, ok := q.(*bfifoQdisc)
	return ok && b.Handle == netlink.MakeHandle(c.Minor, 0) && b.Limit == c.QueueLimit
}

// inPlace: a bfifo's limit changes in place.
func (fifoLeaf) inPlace(*plan.Tree, plan.Class, netlink.Qdisc) bool { return true }

func (fifoLeaf) read(q netlink.Qdisc) (plan.LeafSpec, bool) {
	return plan.LeafSpec{Kind: plan.LeafFIFO}, q == nil || q.Type() == "pfifo" || q.Type() == "bfifo"
}

// bfifoReq creates or replaces q (a replace of a bfifo changes its limit
// in place). Its options are struct tc_fifo_qopt: the limit alone.
func bfifoReq(q *bfifoQdisc) *nl.NetlinkRequest {
	req := tcMsg(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, q.LinkIndex, q.Handle, q.Parent)
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("bfifo")))
	opt := make([]byte, 4)
	binary.NativeEndian.PutUint32(opt, q.Limit)
	req.AddData(nl.NewRtAttr(nl.TCA_OPTIONS, opt))
	return req
}

// replaceLeaf writes leaf qdisc q: a bfifo through gtpqos's own socket,
// anything else through the handle.
func (r *Reconciler) replaceLeaf(link netlink.Link, q netlink.Qdisc) error {
	b, ok := q.(*bfifoQdisc)
	if !ok {
		return r.h.QdiscReplace(q)
	}
	c, err := r.tc(link)
	if err != nil {
		return err
	}
	return c.do(bfifoReq(b))
}

// readFifoLimits replaces the bfifos in byParent (listed without their
// limit) with bfifoQdiscs carrying it, from one dump of the device's
// qdiscs; it dumps nothing when there is no bfifo.
func (r *Reconciler) readFifoLimits(link netlink.Link, byParent map[uint32]netlink.Qdisc) error {
	found := false
	for _, q := range byParent {
		found = found || q.Type() == "bfifo"
	}
	if !found {
		return nil
	}
	c, err := r.tc(link)
	if err != nil {
		return err
	}
	ifindex := link.Attrs().Index
	err = c.query(tcMsg(unix.RTM_GETQDISC, unix.NLM_F_DUMP, ifindex, 0, 0), unix.RTM_NEWQDISC, func(b []byte) error {
		q, ok, err := parseBfifo(b)
		if ok && q.LinkIndex == ifindex && byParent[q.Parent] != nil && byParent[q.Parent].Type() == "bfifo" {
			byParent[q.Parent] = q
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("dev %s: read leaf limits: %w", r.dev, err)
	}
	return nil
}

// parseBfifo decodes an RTM_NEWQDISC message of a bfifo; ok is false for
// other kinds.
func parseBfifo(b []byte) (q *bfifoQdisc, ok bool, err error) {
	m, opts, ok, err := kindOptions(b, "bfifo", "qdisc")
	if err != nil || !ok || len(opts) < 4 {
		return nil, false, err
	}
	q = &bfifoQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: int(m.Ifindex), Handle: m.Handle, Parent: m.Parent}}
	q.Limit = binary.NativeEndian.Uint32(opts)
	return q, true, nil
}
