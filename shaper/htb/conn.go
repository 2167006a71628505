package htb

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
)

// What other backends that build an HTB tree of their own (package
// shaper/edtbackend) reuse from this one: the tc messages vishvananda/netlink
// cannot express (a root with a size table, class rate specs with an
// overhead) on this package's route-netlink socket, and how a device's
// headers give the overhead.

// Conn is a route-netlink socket for those messages, in one network
// namespace.
type Conn struct{ c *rtnl }

// Dial opens a Conn in ns (netns.None(): the current namespace).
func Dial(ns netns.NsHandle) (*Conn, error) {
	c, err := dialRtnl(ns)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c}, nil
}

// Close releases the socket.
func (c *Conn) Close() { c.c.close() }

// Do sends reqs in one sendmsg and returns the first request's error (nil:
// all done).
func (c *Conn) Do(reqs ...*nl.NetlinkRequest) error {
	errs, err := c.c.exec(reqs...)
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// RootRequest creates or replaces ifindex's root HTB qdisc with the given
// handle and default class; overhead > 0 adds the size table that takes
// overhead bytes off every packet before a class counts it (packet
// accounting, as this backend's trees have).
func RootRequest(ifindex int, handle, defcls, overhead uint32) *nl.NetlinkRequest {
	var stab *sizeSpec
	if overhead > 0 {
		stab = &sizeSpec{Overhead: -int32(overhead), LinkLayer: linkLayerEthernet}
	}
	return rootReqFor(ifindex, handle, defcls, stab)
}

// ClassRequest creates or changes the HTB class hc, its rate specs adding
// overhead bytes to every packet (the link class under a size table).
func ClassRequest(hc *netlink.HtbClass, overhead uint16) (*nl.NetlinkRequest, error) {
	return classReq(unix.NLM_F_CREATE, hc, rateOverhead{rate: overhead, ceil: overhead})
}

// Root is what a device's root qdisc message says.
type Root struct {
	Kind   string
	Handle uint32
	// Overhead is what the size table takes off every packet (0: none).
	Overhead uint32
}

// ReadRoot reads ifindex's root qdisc.
func (c *Conn) ReadRoot(ifindex int) (Root, error) {
	var ri rootInfo
	err := c.c.query(rootGetReq(ifindex), unix.RTM_NEWQDISC, func(b []byte) (err error) {
		ri, err = parseRoot(b)
		return err
	})
	if err != nil {
		return Root{}, fmt.Errorf("read root qdisc: %w", err)
	}
	r := Root{Kind: ri.kind, Handle: ri.handle}
	if ri.stab != nil && ri.stab.Overhead < 0 {
		r.Overhead = uint32(-ri.stab.Overhead)
	}
	return r, nil
}

// DeviceEncap says what surrounds the user's packet at link's qdisc for
// dir's flows (shaper.Policy.ResolveOverhead turns it into the overhead).
func DeviceEncap(h *netlink.Handle, link netlink.Link, dir shaper.Direction) (shaper.Encap, error) {
	return readEncap(h, link, dir)
}
