package stock

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/free5gc/go-gtp5gnl"
	"github.com/khirono/go-nl"
	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/internal/testenv"
)

// Guest-side plumbing for the real-gtp5g scenario, adapted from tests/vm's
// (unexported) helpers: gtp5g devices made the way go-upf makes them (a UDP
// socket on :2152 handed to RTM_NEWLINK) and rules set with go-gtp5gnl.

// gtp5g device roles and link attributes (IFLA_GTP5G_*).
const (
	gtp5gRoleUPF      = 0
	gtp5gRoleRAN      = 1
	iflaGtp5gFD1      = 1
	iflaGtp5gHashSize = 2
	iflaGtp5gRole     = 3
)

// nsDo runs f on a thread inside ns (nil: the current namespace).
func nsDo(ns *testenv.NetNS, f func() error) error {
	if ns == nil {
		return f()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(ns.Handle); err != nil {
			errc <- err
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			errc <- err // the thread stays locked and dies with the goroutine
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// ipIn runs ip in ns (nil: the current namespace) and fails the test on error.
func ipIn(t *testing.T, ns *testenv.NetNS, args ...string) {
	t.Helper()
	if ns != nil {
		ns.Run(t, "ip", args...)
		return
	}
	if out, err := runIP(args...); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// addGtp5gLink creates a gtp5g device in ns backed by a UDP socket on :2152
// that stays open until the test ends, and brings it up.
func addGtp5gLink(t *testing.T, ns *testenv.NetNS, name string, role uint32) {
	t.Helper()
	var conn *net.UDPConn
	var file *os.File
	err := nsDo(ns, func() error {
		var err error
		if conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: 2152}); err != nil {
			return err
		}
		if file, err = conn.File(); err != nil {
			return err
		}
		return createGtp5gLink(name, int(file.Fd()), role)
	})
	if conn != nil {
		t.Cleanup(func() { conn.Close() })
	}
	if file != nil {
		t.Cleanup(func() { file.Close() })
	}
	if err != nil {
		t.Fatalf("create gtp5g device %s: %v", name, err)
	}
	ipIn(t, ns, "link", "set", name, "up")
}

func createGtp5gLink(name string, fd int, role uint32) error {
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
			d.Uint32(iflaGtp5gFD1, uint32(fd))
			d.Uint32(iflaGtp5gHashSize, 1024)
			d.Uint32(iflaGtp5gRole, role)
			return nil
		})
		return nil
	})
	attrs, err := ae.Encode()
	if err != nil {
		return err
	}
	_, err = c.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_NEWLINK, Flags: netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl},
		Data:   append(make([]byte, unix.SizeofIfInfomsg), attrs...),
	})
	if err != nil {
		return fmt.Errorf("RTM_NEWLINK %s (kind gtp5g): %w", name, err)
	}
	return nil
}

// rules is a go-gtp5gnl client bound to one gtp5g device.
type rules struct {
	c    *gtp5gnl.Client
	link *gtp5gnl.Link
}

func dialRules(t *testing.T, ns *testenv.NetNS, dev string) *rules {
	t.Helper()
	var r *rules
	err := nsDo(ns, func() error {
		mux, err := nl.NewMux()
		if err != nil {
			return err
		}
		go func() { _ = mux.Serve() }()
		t.Cleanup(mux.Close)
		conn, err := nl.Open(syscall.NETLINK_GENERIC)
		if err != nil {
			return err
		}
		t.Cleanup(conn.Close)
		c, err := gtp5gnl.NewClient(conn, mux)
		if err != nil {
			return fmt.Errorf("resolve family gtp5g: %w", err)
		}
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		r = &rules{c: c, link: &gtp5gnl.Link{Name: dev, Index: ifi.Index}}
		return nil
	})
	if err != nil {
		t.Fatalf("gtp5g client for %s: %v", dev, err)
	}
	return r
}

func oid(seid uint64, id int) gtp5gnl.OID {
	if seid == 0 {
		return gtp5gnl.OID{uint64(id)}
	}
	return gtp5gnl.OID{seid, uint64(id)}
}

func bitrate(hi32, lo8, hiDL, loDL uint16, kbps uint64) nl.AttrList {
	return nl.AttrList{
		{Type: hi32, Value: nl.AttrU32(kbps >> 8)}, {Type: lo8, Value: nl.AttrU8(kbps)},
		{Type: hiDL, Value: nl.AttrU32(kbps >> 8)}, {Type: loDL, Value: nl.AttrU8(kbps)},
	}
}

func (r *rules) addQER(t *testing.T, seid uint64, id int, qfi uint8, gbrKbps, mbrKbps uint64) {
	t.Helper()
	attrs := []nl.Attr{
		{Type: gtp5gnl.QER_GATE, Value: nl.AttrU8(0)},
		{Type: gtp5gnl.QER_MBR, Value: bitrate(gtp5gnl.QER_MBR_UL_HIGH32, gtp5gnl.QER_MBR_UL_LOW8, gtp5gnl.QER_MBR_DL_HIGH32, gtp5gnl.QER_MBR_DL_LOW8, mbrKbps)},
		{Type: gtp5gnl.QER_GBR, Value: bitrate(gtp5gnl.QER_GBR_UL_HIGH32, gtp5gnl.QER_GBR_UL_LOW8, gtp5gnl.QER_GBR_DL_HIGH32, gtp5gnl.QER_GBR_DL_LOW8, gbrKbps)},
		{Type: gtp5gnl.QER_QFI, Value: nl.AttrU8(qfi)},
	}
	if err := gtp5gnl.CreateQEROID(r.c, r.link, oid(seid, id), attrs); err != nil {
		t.Fatalf("%s: add QER seid=%d id=%d: %v", r.link.Name, seid, id, err)
	}
}

// addFAR adds a forwarding FAR; teid != 0 adds outer header creation
// GTP-U/UDP/IPv4 toward peer:2152.
func (r *rules) addFAR(t *testing.T, seid uint64, id int, teid uint32, peer string) {
	t.Helper()
	attrs := []nl.Attr{{Type: gtp5gnl.FAR_APPLY_ACTION, Value: nl.AttrU16(0x02)}}
	if teid != 0 {
		attrs = append(attrs, nl.Attr{Type: gtp5gnl.FAR_FORWARDING_PARAMETER, Value: nl.AttrList{{
			Type: gtp5gnl.FORWARDING_PARAMETER_OUTER_HEADER_CREATION,
			Value: nl.AttrList{
				{Type: gtp5gnl.OUTER_HEADER_CREATION_DESCRIPTION, Value: nl.AttrU16(0x0100)},
				{Type: gtp5gnl.OUTER_HEADER_CREATION_O_TEID, Value: nl.AttrU32(teid)},
				{Type: gtp5gnl.OUTER_HEADER_CREATION_PEER_ADDR_IPV4, Value: ip4(peer)},
				{Type: gtp5gnl.OUTER_HEADER_CREATION_PORT, Value: nl.AttrU16(2152)},
			},
		}}})
	}
	if err := gtp5gnl.CreateFAROID(r.c, r.link, oid(seid, id), attrs); err != nil {
		t.Fatalf("%s: add FAR seid=%d id=%d: %v", r.link.Name, seid, id, err)
	}
}

func ip4(s string) nl.AttrBytes { return nl.AttrBytes(net.ParseIP(s).To4()) }

// pdr describes a PDR; zero fields are left out.
type pdr struct {
	srcIntf   uint8 // 0 access, 1 core
	ueIP      string
	fteid     uint32
	fteidAddr string
	sdfSrc    string // "permit out ip from sdfSrc to ueIP"
	ohr       bool
	farID     uint32
	qerID     uint32
}

func (r *rules) addPDR(t *testing.T, seid uint64, id int, p pdr) {
	t.Helper()
	attrs := []nl.Attr{
		{Type: gtp5gnl.PDR_PRECEDENCE, Value: nl.AttrU32(32)},
		{Type: gtp5gnl.PDR_FAR_ID, Value: nl.AttrU32(p.farID)},
	}
	if p.ohr {
		attrs = append(attrs, nl.Attr{Type: gtp5gnl.PDR_OUTER_HEADER_REMOVAL, Value: nl.AttrU8(0)})
	}
	if p.qerID != 0 {
		attrs = append(attrs, nl.Attr{Type: gtp5gnl.PDR_QER_ID, Value: nl.AttrU32(p.qerID)})
	}
	const pdiSrcIntf = 4 // GTP5G_PDI_SRC_INTF; go-gtp5gnl v1.4.6 has no name for it
	pdi := nl.AttrList{{Type: pdiSrcIntf, Value: nl.AttrU8(p.srcIntf)}}
	if p.ueIP != "" {
		pdi = append(pdi, nl.Attr{Type: gtp5gnl.PDI_UE_ADDR_IPV4, Value: ip4(p.ueIP)})
	}
	if p.fteid != 0 {
		pdi = append(pdi, nl.Attr{Type: gtp5gnl.PDI_F_TEID, Value: nl.AttrList{
			{Type: gtp5gnl.F_TEID_I_TEID, Value: nl.AttrU32(p.fteid)},
			{Type: gtp5gnl.F_TEID_GTPU_ADDR_IPV4, Value: ip4(p.fteidAddr)},
		}})
	}
	if p.sdfSrc != "" {
		full := nl.AttrBytes{0xff, 0xff, 0xff, 0xff}
		pdi = append(pdi, nl.Attr{Type: gtp5gnl.PDI_SDF_FILTER, Value: nl.AttrList{{
			Type: gtp5gnl.SDF_FILTER_FLOW_DESCRIPTION,
			Value: nl.AttrList{
				{Type: gtp5gnl.FLOW_DESCRIPTION_ACTION, Value: nl.AttrU8(gtp5gnl.SDF_FILTER_PERMIT)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_DIRECTION, Value: nl.AttrU8(gtp5gnl.SDF_FILTER_OUT)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_PROTOCOL, Value: nl.AttrU8(0xff)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_SRC_IPV4, Value: ip4(p.sdfSrc)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_SRC_MASK, Value: full},
				{Type: gtp5gnl.FLOW_DESCRIPTION_DEST_IPV4, Value: ip4(p.ueIP)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_DEST_MASK, Value: full},
			},
		}}})
	}
	attrs = append(attrs, nl.Attr{Type: gtp5gnl.PDR_PDI, Value: pdi})
	if err := gtp5gnl.CreatePDROID(r.c, r.link, oid(seid, id), attrs); err != nil {
		t.Fatalf("%s: add PDR seid=%d id=%d: %v", r.link.Name, seid, id, err)
	}
}
