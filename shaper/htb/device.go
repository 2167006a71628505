package htb

import (
	"bytes"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
)

// tc returns the Reconciler's route-netlink socket, opening it on first
// use, after checking that it sees link (name and hardware address at the
// same index) as the handle does: a socket in another network namespace
// than the handle's would write to another device.
func (r *Reconciler) tc(link netlink.Link) (*rtnl, error) {
	if r.raw == nil {
		c, err := dialRtnl(r.opts.NetNS)
		if err != nil {
			return nil, fmt.Errorf("dev %s: %w", r.dev, err)
		}
		r.raw, r.ownRaw, r.rawIndex = c, true, 0
	}
	a := link.Attrs()
	if r.rawIndex == a.Index {
		return r.raw, nil
	}
	name, hw, err := r.raw.linkIdentity(a.Index)
	if err != nil {
		return nil, fmt.Errorf("dev %s: read device %d through the tc socket: %w", r.dev, a.Index, err)
	}
	if name != a.Name || !sameHardwareAddr(hw, a.HardwareAddr) {
		return nil, fmt.Errorf("dev %s: the tc socket sees %q at index %d: it is in another network namespace than the netlink handle (give the Reconciler Options.NetNS)", r.dev, name, a.Index)
	}
	r.rawIndex = a.Index
	return r.raw, nil
}

// sameHardwareAddr compares two devices' addresses; an all-zero address
// (lo's) and none are the same, as netlink libraries report either.
func sameHardwareAddr(a, b []byte) bool {
	zero := func(x []byte) bool { return bytes.Count(x, []byte{0}) == len(x) }
	return bytes.Equal(a, b) || (zero(a) && zero(b))
}

// linkIdentity returns the name and hardware address of the device with
// the given index.
func (c *rtnl) linkIdentity(index int) (name string, hw []byte, err error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, 0)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	err = c.query(req, unix.RTM_NEWLINK, func(b []byte) error {
		if len(b) < unix.SizeofIfInfomsg {
			return fmt.Errorf("link message: %d bytes", len(b))
		}
		attrs, err := nl.ParseRouteAttr(b[unix.SizeofIfInfomsg:])
		if err != nil {
			return err
		}
		for _, at := range attrs {
			switch at.Attr.Type {
			case unix.IFLA_IFNAME:
				name = unix.ByteSliceToString(at.Value)
			case unix.IFLA_ADDRESS:
				hw = append([]byte(nil), at.Value...)
			}
		}
		return nil
	})
	return name, hw, err
}

// readEncap says what surrounds the user's packet at link's qdisc: the
// link-layer header in the packet's length (from the device's link type;
// a VLAN device's tag only when it keeps it in the packet), and, for an N3
// device, whether its tunnel runs over IPv6 (an IPv6 address and no IPv4
// one). Link types whose header at the qdisc gtpqos cannot tell are an
// error naming the type.
func readEncap(h *netlink.Handle, link netlink.Link, dir shaper.Direction) (shaper.Encap, error) {
	a := link.Attrs()
	var e shaper.Encap
	switch a.EncapType {
	case "ether", "loopback":
		e.L2, e.L2Name = shaper.EthernetHeader, "Ethernet"
		if v, ok := link.(*netlink.Vlan); ok && v.ReorderHdr != nil && !*v.ReorderHdr {
			e.L2, e.L2Name = shaper.EthernetHeader+shaper.VLANTag, "Ethernet + VLAN tag"
		}
	case "none", "tunnel", "tunnel6", "sit":
		e.L2Name = "raw IP (no link header)"
	default:
		return e, fmt.Errorf("dev %s: link type %s: gtpqos cannot tell which bytes at its qdisc are not the user's packet; set the policy's overhead (bytes) or accounting: frame", a.Name, a.EncapType)
	}
	if dir == shaper.Uplink {
		return e, nil
	}
	v4, err := h.AddrList(link, unix.AF_INET)
	if err != nil {
		return e, fmt.Errorf("dev %s: list addresses: %w", a.Name, err)
	}
	if len(v4) == 0 {
		v6, err := h.AddrList(link, unix.AF_INET6)
		if err != nil {
			return e, fmt.Errorf("dev %s: list addresses: %w", a.Name, err)
		}
		for _, ad := range v6 {
			if ad.IP.IsGlobalUnicast() {
				e.OuterIPv6 = true
			}
		}
	}
	return e, nil
}
