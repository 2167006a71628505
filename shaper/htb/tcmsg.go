package htb

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// The tc messages gtpqos builds itself (vishvananda/netlink v1.3.1 has no
// size table and no rate-spec overhead), and their parsers. Field layouts
// are the kernel's (include/uapi/linux/pkt_sched.h), in host byte order.

const (
	// tcaStabBase is TCA_STAB_BASE, the struct tc_sizespec inside TCA_STAB.
	tcaStabBase = 1
	// linkLayerEthernet is TC_LINKLAYER_ETHERNET.
	linkLayerEthernet = 1
	// sizeofSizeSpec is sizeof(struct tc_sizespec).
	sizeofSizeSpec = 24
	// htbVersion and htbRate2Quantum are what tc and vishvananda send.
	htbVersion      = 3
	htbRate2Quantum = 10
)

// sizeSpec is struct tc_sizespec: the root qdisc's size table. gtpqos
// uses no table (TSize 0), only Overhead, which the kernel adds to every
// packet's length before any class counts it (qdisc_pkt_len), down to 1.
type sizeSpec struct {
	CellLog, SizeLog uint8
	CellAlign        int16
	Overhead         int32
	LinkLayer        uint32
	MPU, MTU, TSize  uint32
}

func (s sizeSpec) serialize() []byte {
	b := make([]byte, sizeofSizeSpec)
	ne := nl.NativeEndian()
	b[0], b[1] = s.CellLog, s.SizeLog
	ne.PutUint16(b[2:], uint16(s.CellAlign))
	ne.PutUint32(b[4:], uint32(s.Overhead))
	ne.PutUint32(b[8:], s.LinkLayer)
	ne.PutUint32(b[12:], s.MPU)
	ne.PutUint32(b[16:], s.MTU)
	ne.PutUint32(b[20:], s.TSize)
	return b
}

func parseSizeSpec(b []byte) (sizeSpec, error) {
	if len(b) < sizeofSizeSpec {
		return sizeSpec{}, fmt.Errorf("size table: %d bytes, want %d", len(b), sizeofSizeSpec)
	}
	ne := nl.NativeEndian()
	return sizeSpec{CellLog: b[0], SizeLog: b[1], CellAlign: int16(ne.Uint16(b[2:])), Overhead: int32(ne.Uint32(b[4:])),
		LinkLayer: ne.Uint32(b[8:]), MPU: ne.Uint32(b[12:]), MTU: ne.Uint32(b[16:]), TSize: ne.Uint32(b[20:])}, nil
}

// stabFor is the size table a tree's root carries: under packet accounting
// one that takes the overhead off every packet, else none.
func stabFor(t *plan.Tree) *sizeSpec {
	if t.Accounting != shaper.AccountPacket {
		return nil
	}
	return &sizeSpec{Overhead: -int32(t.Overhead), LinkLayer: linkLayerEthernet}
}

// sameStab compares a desired and an actual size table.
func sameStab(d, a *sizeSpec) bool {
	if d == nil || a == nil {
		return d == nil && a == nil
	}
	return *d == *a
}

// tcMsg starts a tc request on the device's root or one of its classes.
func tcMsg(typ, flags, ifindex int, handle, parent uint32) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(typ, flags)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifindex), Handle: handle, Parent: parent})
	return req
}

// rootAddReq creates (or, over a foreign root with another handle,
// replaces) the root HTB with its default class and size table.
func rootAddReq(ifindex int, defcls uint32, stab *sizeSpec) *nl.NetlinkRequest {
	return rootReqFor(ifindex, rootHandle(), defcls, stab)
}

// rootReqFor is rootAddReq for a root with the given handle.
func rootReqFor(ifindex int, handle, defcls uint32, stab *sizeSpec) *nl.NetlinkRequest {
	req := tcMsg(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, ifindex, handle, netlink.HANDLE_ROOT)
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("htb")))
	opts := nl.NewRtAttr(nl.TCA_OPTIONS, nil)
	glob := nl.TcHtbGlob{Version: htbVersion, Rate2Quantum: htbRate2Quantum, Defcls: defcls}
	opts.AddRtAttr(nl.TCA_HTB_INIT, glob.Serialize())
	req.AddData(opts)
	addStab(req, stab)
	return req
}

// rootStabReq changes the root's size table in place: a change without
// TCA_OPTIONS (HTB has no change operation for its own options) carrying
// the new table, or none, which removes it (qdisc_change in
// net/sched/sch_api.c).
func rootStabReq(ifindex int, stab *sizeSpec) *nl.NetlinkRequest {
	req := tcMsg(unix.RTM_NEWQDISC, 0, ifindex, rootHandle(), netlink.HANDLE_ROOT)
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("htb")))
	addStab(req, stab)
	return req
}

// rootDelReq deletes the device's root qdisc with the given handle.
func rootDelReq(ifindex int, handle uint32) *nl.NetlinkRequest {
	return tcMsg(unix.RTM_DELQDISC, 0, ifindex, handle, netlink.HANDLE_ROOT)
}

// rootGetReq asks for the device's root qdisc. The kernel answers a qdisc
// get as a notification, to the asker only with NLM_F_ECHO.
func rootGetReq(ifindex int) *nl.NetlinkRequest {
	return tcMsg(unix.RTM_GETQDISC, unix.NLM_F_ECHO, ifindex, 0, netlink.HANDLE_ROOT)
}

func addStab(req *nl.NetlinkRequest, stab *sizeSpec) {
	if stab == nil {
		return
	}
	s := nl.NewRtAttr(nl.TCA_STAB, nil)
	s.AddRtAttr(tcaStabBase, stab.serialize())
	req.AddData(s)
}

// rateOverhead is the overhead of a class's rate and ceil rate specs.
type rateOverhead struct{ rate, ceil uint16 }

// classReq creates (flags NLM_F_CREATE) or changes (0) an HTB class: what
// vishvananda's ClassReplace and ClassChange send, plus the rate specs'
// overhead.
func classReq(flags int, hc *netlink.HtbClass, over rateOverhead) (*nl.NetlinkRequest, error) {
	req := tcMsg(unix.RTM_NEWTCLASS, flags, hc.LinkIndex, hc.Handle, hc.Parent)
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("htb")))
	opt := nl.TcHtbCopt{Buffer: hc.Buffer, Cbuffer: hc.Cbuffer, Quantum: hc.Quantum, Level: hc.Level, Prio: hc.Prio}
	var rtab, ctab [256]uint32
	opt.Rate = nl.TcRateSpec{Rate: uint32(min(hc.Rate, 1<<32-1)), Overhead: over.rate}
	opt.Ceil = nl.TcRateSpec{Rate: uint32(min(hc.Ceil, 1<<32-1)), Overhead: over.ceil}
	// The kernel ignores the tables once the rate spec names its link layer
	// (which CalcRtable sets), but old kernels want them present.
	if netlink.CalcRtable(&opt.Rate, rtab[:], -1, 1600, nl.LINKLAYER_ETHERNET) < 0 ||
		netlink.CalcRtable(&opt.Ceil, ctab[:], -1, 1600, nl.LINKLAYER_ETHERNET) < 0 {
		return nil, errors.New("htb: rate table")
	}
	opts := nl.NewRtAttr(nl.TCA_OPTIONS, nil)
	opts.AddRtAttr(nl.TCA_HTB_PARMS, opt.Serialize())
	opts.AddRtAttr(nl.TCA_HTB_RTAB, netlink.SerializeRtab(rtab))
	opts.AddRtAttr(nl.TCA_HTB_CTAB, netlink.SerializeRtab(ctab))
	if hc.Rate >= 1<<32 {
		opts.AddRtAttr(nl.TCA_HTB_RATE64, nl.Uint64Attr(hc.Rate))
	}
	if hc.Ceil >= 1<<32 {
		opts.AddRtAttr(nl.TCA_HTB_CEIL64, nl.Uint64Attr(hc.Ceil))
	}
	req.AddData(opts)
	return req, nil
}

// classDumpReq dumps the device's classes under parent.
func classDumpReq(ifindex int, parent uint32) *nl.NetlinkRequest {
	return tcMsg(unix.RTM_GETTCLASS, unix.NLM_F_DUMP, ifindex, 0, parent)
}

// rootInfo is what the root qdisc message says.
type rootInfo struct {
	kind    string
	handle  uint32
	ifindex int
	defcls  uint32
	stab    *sizeSpec
}

// parseRoot decodes an RTM_NEWQDISC message.
func parseRoot(b []byte) (rootInfo, error) {
	if len(b) < nl.SizeofTcMsg {
		return rootInfo{}, fmt.Errorf("qdisc message: %d bytes", len(b))
	}
	m := nl.DeserializeTcMsg(b)
	ri := rootInfo{handle: m.Handle, ifindex: int(m.Ifindex)}
	attrs, err := nl.ParseRouteAttr(b[nl.SizeofTcMsg:])
	if err != nil {
		return ri, fmt.Errorf("qdisc message: %w", err)
	}
	var opts []byte
	for _, a := range attrs {
		switch a.Attr.Type {
		case nl.TCA_KIND:
			ri.kind = unix.ByteSliceToString(a.Value)
		case nl.TCA_OPTIONS:
			opts = a.Value
		case nl.TCA_STAB:
			if ri.stab, err = parseStab(a.Value); err != nil {
				return ri, err
			}
		}
	}
	if ri.kind != "htb" || opts == nil {
		return ri, nil
	}
	inner, err := nl.ParseRouteAttr(opts)
	if err != nil {
		return ri, fmt.Errorf("htb options: %w", err)
	}
	for _, a := range inner {
		if a.Attr.Type == nl.TCA_HTB_INIT && len(a.Value) >= nl.SizeofTcHtbGlob {
			ri.defcls = nl.DeserializeTcHtbGlob(a.Value).Defcls
		}
	}
	return ri, nil
}

func parseStab(b []byte) (*sizeSpec, error) {
	attrs, err := nl.ParseRouteAttr(b)
	if err != nil {
		return nil, fmt.Errorf("size table: %w", err)
	}
	for _, a := range attrs {
		if a.Attr.Type == tcaStabBase {
			s, err := parseSizeSpec(a.Value)
			return &s, err
		}
	}
	return nil, errors.New("size table without its base")
}

// kindOptions splits a tc message (qdisc or class) into its header and
// its TCA_OPTIONS, reporting whether its TCA_KIND is kind. The attributes
// are walked, not parsed into a list: a read-back parses one message per
// class, 65k at the most.
func kindOptions(b []byte, kind, what string) (m *nl.TcMsg, opts []byte, ok bool, err error) {
	if len(b) < nl.SizeofTcMsg {
		return nil, nil, false, fmt.Errorf("%s message: %d bytes", what, len(b))
	}
	m = nl.DeserializeTcMsg(b)
	err = walkAttrs(b[nl.SizeofTcMsg:], func(typ uint16, v []byte) {
		switch typ {
		case nl.TCA_KIND:
			ok = unix.ByteSliceToString(v) == kind
		case nl.TCA_OPTIONS:
			opts = v
		}
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("%s message: %w", what, err)
	}
	return m, opts, ok, nil
}

// parseClass decodes an RTM_NEWTCLASS message of an HTB class; ok is false
// for other kinds.
func parseClass(b []byte) (hc *netlink.HtbClass, over rateOverhead, ok bool, err error) {
	m, opts, ok, err := kindOptions(b, "htb", "class")
	if err != nil || !ok || opts == nil {
		return nil, over, false, err
	}
	hc = &netlink.HtbClass{ClassAttrs: netlink.ClassAttrs{LinkIndex: int(m.Ifindex), Handle: m.Handle, Parent: m.Parent}}
	err = walkAttrs(opts, func(typ uint16, v []byte) {
		switch {
		case typ == nl.TCA_HTB_PARMS && len(v) >= nl.SizeofTcHtbCopt:
			o := nl.DeserializeTcHtbCopt(v)
			hc.Rate, hc.Ceil, hc.Buffer, hc.Cbuffer = uint64(o.Rate.Rate), uint64(o.Ceil.Rate), o.Buffer, o.Cbuffer
			hc.Quantum, hc.Level, hc.Prio = o.Quantum, o.Level, o.Prio
			over = rateOverhead{rate: o.Rate.Overhead, ceil: o.Ceil.Overhead}
		case typ == nl.TCA_HTB_RATE64 && len(v) >= 8:
			hc.Rate = binary.NativeEndian.Uint64(v)
		case typ == nl.TCA_HTB_CEIL64 && len(v) >= 8:
			hc.Ceil = binary.NativeEndian.Uint64(v)
		}
	})
	if err != nil {
		return nil, over, false, fmt.Errorf("htb class options: %w", err)
	}
	return hc, over, true, nil
}

// walkAttrs calls fn with each route attribute's type and value in b.
func walkAttrs(b []byte, fn func(typ uint16, v []byte)) error {
	for len(b) >= unix.SizeofRtAttr {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < unix.SizeofRtAttr || l > len(b) {
			return fmt.Errorf("attribute of %d bytes in %d", l, len(b))
		}
		fn(binary.NativeEndian.Uint16(b[2:4])&^unix.NLA_F_NESTED, b[unix.SizeofRtAttr:l])
		b = b[min(nlmAlign(l), len(b)):]
	}
	return nil
}
