// Package mtu checks that gtp5g's tunnel fits the N3 device: a user packet
// as large as the gtp5g device's MTU, encapsulated, must not exceed the N3
// device's MTU, or every full-size packet leaves N3 as two IP fragments.
package mtu

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Encap is what gtp5g adds to a downlink user packet on N3: outer IPv4
// (20 bytes), UDP (8), the GTP-U header (8), its optional fields (4) and
// the PDU session container extension that carries the QFI (4).
const Encap = 20 + 8 + 8 + 4 + 4

// Check returns a warning when a gtp5g device's MTU plus Encap exceeds the
// N3 device's MTU, with the numbers and the MTU to set; "" when it fits.
func Check(gtpDev string, gtpMTU int, n3Dev string, n3MTU int) string {
	if gtpMTU+Encap <= n3MTU {
		return ""
	}
	return fmt.Sprintf("gtp5g device %s: MTU %d + %d bytes of GTP-U encapsulation = %d > N3 %s MTU %d: full-size packets leave N3 as two IP fragments; set the UPF's MTU (the gtp5g device's) to %d or less, or raise %s's MTU to %d",
		gtpDev, gtpMTU, Encap, gtpMTU+Encap, n3Dev, n3MTU, n3MTU-Encap, n3Dev, gtpMTU+Encap)
}

// Warnings checks every gtp5g device in namespace ns (0: the current one)
// against the N3 device n3.
func Warnings(ns netns.NsHandle, n3 string) ([]string, error) {
	var h *netlink.Handle
	var err error
	if ns > 0 {
		h, err = netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	} else {
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
	}
	if err != nil {
		return nil, fmt.Errorf("route netlink: %w", err)
	}
	defer h.Close()
	n3Link, err := h.LinkByName(n3)
	if err != nil {
		return nil, fmt.Errorf("N3 device %s: %w", n3, err)
	}
	links, err := h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var out []string
	for _, l := range links {
		if l.Type() != "gtp5g" {
			continue
		}
		if w := Check(l.Attrs().Name, l.Attrs().MTU, n3, n3Link.Attrs().MTU); w != "" {
			out = append(out, w)
		}
	}
	return out, nil
}
