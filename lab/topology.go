package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
)

// topology is the four namespaces, their links, and the two TUN devices.
type topology struct {
	suffix           string
	ue, gnb, upf, dn *namespace
	upfTun, gnbTun   *os.File
}

// nsNames returns the namespace names of a lab with the given suffix.
func nsNames(suffix string) [4]string {
	p := "gtpqos-lab-" + suffix + "-"
	return [4]string{p + "ue", p + "gnb", p + "upf", p + "dn"}
}

// buildTopology creates the namespaces, veths, addresses, routes and TUN
// devices. On error everything created so far is removed.
func buildTopology(pdrs []PDR) (t *topology, err error) {
	t = &topology{suffix: randomSuffix()}
	defer func() {
		if err != nil {
			_ = t.close()
			t = nil
		}
	}()
	for _, step := range []func() error{t.namespaces, t.links, t.tuns, func() error { return t.addresses(pdrs) }, t.routes} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// namespaces creates the four namespaces: no reverse-path filter, no IPv6,
// forwarding in the gNB and the UPF.
func (t *topology) namespaces() error {
	names := nsNames(t.suffix)
	for i, dst := range []**namespace{&t.ue, &t.gnb, &t.upf, &t.dn} {
		ns, err := newNamespace(names[i])
		if err != nil {
			return err
		}
		*dst = ns
		for _, kv := range [][2]string{
			{"net/ipv4/conf/all/rp_filter", "0"},
			{"net/ipv4/conf/default/rp_filter", "0"},
			{"net/ipv6/conf/all/disable_ipv6", "1"},
			{"net/ipv6/conf/default/disable_ipv6", "1"},
		} {
			if err := ns.sysctl(kv[0], kv[1]); err != nil {
				return err
			}
		}
	}
	for _, ns := range []*namespace{t.gnb, t.upf} {
		if err := ns.sysctl("net/ipv4/ip_forward", "1"); err != nil {
			return err
		}
	}
	return nil
}

// links creates the veth pairs UE-gNB, gNB-UPF (N3) and UPF-DN (N6).
func (t *topology) links() error {
	if err := veth(t.ue, ueDev, t.gnb, gnbUEDev, innerMTU); err != nil {
		return err
	}
	if err := veth(t.upf, N3Dev, t.gnb, gnbN3Dev, 1500); err != nil {
		return err
	}
	return veth(t.upf, upfN6Dev, t.dn, dnN6Dev, innerMTU)
}

// tuns opens the UPF's and the gNB's TUN devices and brings them up.
func (t *topology) tuns() error {
	if err := inNS(t.upf.handle, func() (err error) { t.upfTun, err = openTUN(upfTunDev); return err }); err != nil {
		return fmt.Errorf("netns %s: %w", t.upf.name, err)
	}
	if err := inNS(t.gnb.handle, func() (err error) { t.gnbTun, err = openTUN(gnbTunDev); return err }); err != nil {
		return fmt.Errorf("netns %s: %w", t.gnb.name, err)
	}
	for _, tn := range []struct {
		ns  *namespace
		dev string
	}{{t.upf, upfTunDev}, {t.gnb, gnbTunDev}} {
		l, err := tn.ns.nl.LinkByName(tn.dev)
		if err == nil {
			err = tn.ns.nl.LinkSetMTU(l, innerMTU)
		}
		if err == nil {
			err = tn.ns.nl.LinkSetTxQLen(l, 10000)
		}
		if err == nil {
			err = tn.ns.nl.LinkSetUp(l)
		}
		if err != nil {
			return fmt.Errorf("netns %s: set up %s: %w", tn.ns.name, tn.dev, err)
		}
	}
	return nil
}

// addresses gives the UEs and DN servers of the PDRs and the fixed hops
// their addresses.
func (t *topology) addresses(pdrs []PDR) error {
	ueAddrs := map[netip.Addr]bool{}
	dnAddrs := map[netip.Addr]bool{}
	for _, p := range pdrs {
		ueAddrs[p.UE] = true
		dnAddrs[p.DN.Addr()] = true
	}
	for a := range ueAddrs {
		if err := addAddr(t.ue, ueDev, a, 16); err != nil {
			return err
		}
	}
	for a := range dnAddrs {
		if err := addAddr(t.dn, dnN6Dev, a, 24); err != nil {
			return err
		}
	}
	for _, a := range []struct {
		ns   *namespace
		dev  string
		addr netip.Addr
		bits int
	}{
		{t.gnb, gnbUEDev, UEGateway, 16},
		{t.gnb, gnbN3Dev, GNBN3Addr, 24},
		{t.upf, N3Dev, UPFN3Addr, 24},
		{t.upf, upfN6Dev, UPFN6Addr, 24},
	} {
		if err := addAddr(a.ns, a.dev, a.addr, a.bits); err != nil {
			return err
		}
	}
	return nil
}

// routes: ue -> gnb (default); gnb: uplink plain IP toward the UPF; upf:
// downlink into the N6 TUN; dn: UEs via the UPF.
func (t *topology) routes() error {
	if err := addRoute(t.ue, "", "0.0.0.0/0", UEGateway); err != nil {
		return err
	}
	if err := addRoute(t.gnb, "", DNNet, UPFN3Addr); err != nil {
		return err
	}
	if err := addRoute(t.upf, upfTunDev, UENet, netip.Addr{}); err != nil {
		return err
	}
	return addRoute(t.dn, "", UENet, UPFN6Addr)
}

// veth creates a veth pair a (in na) <-> b (in nb) with the given MTU, up.
func veth(na *namespace, a string, nb *namespace, b string, mtu int) error {
	la := netlink.NewLinkAttrs()
	la.Name = a
	la.MTU = mtu
	v := &netlink.Veth{LinkAttrs: la, PeerName: b, PeerNamespace: netlink.NsFd(int(nb.handle)), PeerMTU: uint32(mtu)}
	if err := na.nl.LinkAdd(v); err != nil {
		return fmt.Errorf("create veth %s (netns %s) <-> %s (netns %s): %w", a, na.name, b, nb.name, err)
	}
	for _, e := range []struct {
		ns  *namespace
		dev string
	}{{na, a}, {nb, b}} {
		l, err := e.ns.nl.LinkByName(e.dev)
		if err == nil {
			err = e.ns.nl.LinkSetUp(l)
		}
		if err != nil {
			return fmt.Errorf("netns %s: set %s up: %w", e.ns.name, e.dev, err)
		}
	}
	return nil
}

func addAddr(ns *namespace, dev string, a netip.Addr, bits int) error {
	l, err := ns.nl.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("netns %s: find %s: %w", ns.name, dev, err)
	}
	ipn := &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, 32)}
	if err := ns.nl.AddrAdd(l, &netlink.Addr{IPNet: ipn}); err != nil {
		return fmt.Errorf("netns %s: add %v/%d to %s: %w", ns.name, a, bits, dev, err)
	}
	return nil
}

func addRoute(ns *namespace, dev, dst string, gw netip.Addr) error {
	_, ipn, err := net.ParseCIDR(dst)
	if err != nil {
		return fmt.Errorf("route %s: %w", dst, err)
	}
	r := &netlink.Route{Dst: ipn}
	if dev != "" {
		l, err := ns.nl.LinkByName(dev)
		if err != nil {
			return fmt.Errorf("netns %s: find %s: %w", ns.name, dev, err)
		}
		r.LinkIndex = l.Attrs().Index
	}
	if gw.IsValid() {
		r.Gw = gw.AsSlice()
	}
	if err := ns.nl.RouteAdd(r); err != nil {
		return fmt.Errorf("netns %s: route %s via %v dev %s: %w", ns.name, dst, gw, dev, err)
	}
	return nil
}

// close removes the TUN devices and namespaces; it reports every failure.
func (t *topology) close() error {
	var errs []error
	for _, f := range []*os.File{t.upfTun, t.gnbTun} {
		if f != nil {
			_ = f.Close()
		}
	}
	for _, ns := range []*namespace{t.ue, t.gnb, t.upf, t.dn} {
		if ns != nil {
			errs = append(errs, ns.close())
		}
	}
	return errors.Join(errs...)
}
