package gtp5gtest

import (
	"fmt"
	"net"
	"os"
	"testing"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// gtp5g device roles (IFLA_GTP5G_ROLE).
const (
	// RoleUPF is the UPF side: PDRs match downlink on the UE address.
	RoleUPF = 0
	// RoleRAN is the gNB side (gtp5g's RAN role), for a test's peer.
	RoleRAN = 1
)

// hashSize is IFLA_GTP5G_HASHSIZE as go-upf and gogtp5g-link set it.
const hashSize = 1024

// CreateLink sends RTM_NEWLINK for a gtp5g device in the calling thread's
// namespace, backed by the UDP socket fd, in the given role.
func CreateLink(name string, fd int, role uint32) error {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return fmt.Errorf("dial rtnetlink: %w", err)
	}
	defer c.Close()
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.IFLA_IFNAME, name)
	ae.Nested(unix.IFLA_LINKINFO, func(li *netlink.AttributeEncoder) error {
		li.String(unix.IFLA_INFO_KIND, "gtp5g")
		li.Nested(unix.IFLA_INFO_DATA, func(d *netlink.AttributeEncoder) error {
			d.Uint32(gtp5gnl.IFLA_FD1, uint32(fd))
			d.Uint32(gtp5gnl.IFLA_HASHSIZE, hashSize)
			d.Uint32(gtp5gnl.IFLA_ROLE, role)
			return nil
		})
		return nil
	})
	attrs, err := ae.Encode()
	if err != nil {
		return fmt.Errorf("encode link attributes: %w", err)
	}
	ifinfo := make([]byte, unix.SizeofIfInfomsg) // AF_UNSPEC, no index
	_, err = c.Execute(netlink.Message{
		Header: netlink.Header{
			Type:  unix.RTM_NEWLINK,
			Flags: netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl,
		},
		Data: append(ifinfo, attrs...),
	})
	if err != nil {
		return fmt.Errorf("RTM_NEWLINK %s (kind gtp5g): %w", name, err)
	}
	return nil
}

// AddLink creates a gtp5g device in the namespace, backed by a UDP socket
// on :2152 that stays open until the test ends (as go-upf and
// gogtp5g-link keep theirs), and brings it up. The device is deleted when
// the test ends.
func (n NS) AddLink(tb testing.TB, name string, role uint32) {
	tb.Helper()
	var conn *net.UDPConn
	var file *os.File
	err := n.Do(func() error {
		var err error
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: 2152})
		if err != nil {
			return fmt.Errorf("listen udp :2152: %w", err)
		}
		file, err = conn.File()
		if err != nil {
			return fmt.Errorf("udp socket fd: %w", err)
		}
		return CreateLink(name, int(file.Fd()), role)
	})
	if conn != nil {
		tb.Cleanup(func() { _ = conn.Close() })
	}
	if file != nil {
		tb.Cleanup(func() { _ = file.Close() })
	}
	if err != nil {
		tb.Fatalf("netns %s: create gtp5g device %s: %v", n.Name, name, err)
	}
	tb.Cleanup(func() { _, _ = n.TryIP("link", "del", name) })
	n.IP(tb, "link", "set", name, "up")
}
