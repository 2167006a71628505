package vm

import (
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/free5gc/go-gtp5gnl"
	"github.com/khirono/go-nl"
)

// This file programs gtp5g rules with go-gtp5gnl v1.4.6, the library
// free5GC's UPF (go-upf) uses, with the same attribute shapes go-upf sends.

// gtp5gRules is a go-gtp5gnl client bound to one gtp5g device.
type gtp5gRules struct {
	c    *gtp5gnl.Client
	link *gtp5gnl.Link
	ns   string
}

// dialRules opens a go-gtp5gnl client in the namespace for device dev.
func (r nsRef) dialRules(t *testing.T, dev string) *gtp5gRules {
	t.Helper()
	var g *gtp5gRules
	err := r.do(func() error {
		mux, err := nl.NewMux()
		if err != nil {
			return fmt.Errorf("netlink mux: %w", err)
		}
		go func() { _ = mux.Serve() }()
		t.Cleanup(mux.Close)
		conn, err := nl.Open(syscall.NETLINK_GENERIC)
		if err != nil {
			return fmt.Errorf("open generic netlink: %w", err)
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
		g = &gtp5gRules{c: c, link: &gtp5gnl.Link{Name: dev, Index: ifi.Index}, ns: r.name}
		return nil
	})
	if err != nil {
		t.Fatalf("netns %s: gtp5g client for %s: %v", r.name, dev, err)
	}
	return g
}

// oid is go-upf's rule key: {SEID, id}, or {id} for SEID 0.
func oid(seid uint64, id int) gtp5gnl.OID {
	if seid == 0 {
		return gtp5gnl.OID{uint64(id)}
	}
	return gtp5gnl.OID{seid, uint64(id)}
}

// qerSpec is a QER as the seed's flows use it (kbit/s, as PFCP sends).
type qerSpec struct {
	qfi              uint8
	gbrKbps, mbrKbps uint64
}

func bitrateAttrs(hi32, lo8 uint16, ul, dl uint64, hiDL, loDL uint16) nl.AttrList {
	return nl.AttrList{
		{Type: hi32, Value: nl.AttrU32(ul >> 8)},
		{Type: lo8, Value: nl.AttrU8(ul)},
		{Type: hiDL, Value: nl.AttrU32(dl >> 8)},
		{Type: loDL, Value: nl.AttrU8(dl)},
	}
}

func (q qerSpec) attrs() []nl.Attr {
	return []nl.Attr{
		{Type: gtp5gnl.QER_GATE, Value: nl.AttrU8(0)},
		{Type: gtp5gnl.QER_MBR, Value: bitrateAttrs(gtp5gnl.QER_MBR_UL_HIGH32, gtp5gnl.QER_MBR_UL_LOW8, q.mbrKbps, q.mbrKbps, gtp5gnl.QER_MBR_DL_HIGH32, gtp5gnl.QER_MBR_DL_LOW8)},
		{Type: gtp5gnl.QER_GBR, Value: bitrateAttrs(gtp5gnl.QER_GBR_UL_HIGH32, gtp5gnl.QER_GBR_UL_LOW8, q.gbrKbps, q.gbrKbps, gtp5gnl.QER_GBR_DL_HIGH32, gtp5gnl.QER_GBR_DL_LOW8)},
		{Type: gtp5gnl.QER_QFI, Value: nl.AttrU8(q.qfi)},
	}
}

func (g *gtp5gRules) addQER(t *testing.T, seid uint64, id int, q qerSpec) {
	t.Helper()
	if err := gtp5gnl.CreateQEROID(g.c, g.link, oid(seid, id), q.attrs()); err != nil {
		t.Fatalf("%s/%s: add QER seid=%d id=%d: %v", g.ns, g.link.Name, seid, id, err)
	}
}

func (g *gtp5gRules) updateQER(t *testing.T, seid uint64, id int, q qerSpec) {
	t.Helper()
	if err := gtp5gnl.UpdateQEROID(g.c, g.link, oid(seid, id), q.attrs()); err != nil {
		t.Fatalf("%s/%s: update QER seid=%d id=%d: %v", g.ns, g.link.Name, seid, id, err)
	}
}

// farForward is a FAR that forwards; with teid != 0 it adds outer header
// creation GTP-U/UDP/IPv4 toward peer:2152.
func farForward(teid uint32, peer string) []nl.Attr {
	attrs := []nl.Attr{{Type: gtp5gnl.FAR_APPLY_ACTION, Value: nl.AttrU16(0x02)}} // FORW
	if teid != 0 {
		attrs = append(attrs, nl.Attr{Type: gtp5gnl.FAR_FORWARDING_PARAMETER, Value: nl.AttrList{{
			Type: gtp5gnl.FORWARDING_PARAMETER_OUTER_HEADER_CREATION,
			Value: nl.AttrList{
				{Type: gtp5gnl.OUTER_HEADER_CREATION_DESCRIPTION, Value: nl.AttrU16(0x0100)},
				{Type: gtp5gnl.OUTER_HEADER_CREATION_O_TEID, Value: nl.AttrU32(teid)},
				{Type: gtp5gnl.OUTER_HEADER_CREATION_PEER_ADDR_IPV4, Value: nl.AttrBytes(net.ParseIP(peer).To4())},
				{Type: gtp5gnl.OUTER_HEADER_CREATION_PORT, Value: nl.AttrU16(2152)},
			},
		}}})
	}
	return attrs
}

func (g *gtp5gRules) addFAR(t *testing.T, seid uint64, id int, attrs []nl.Attr) {
	t.Helper()
	if err := gtp5gnl.CreateFAROID(g.c, g.link, oid(seid, id), attrs); err != nil {
		t.Fatalf("%s/%s: add FAR seid=%d id=%d: %v", g.ns, g.link.Name, seid, id, err)
	}
}

// pdiSrcIntf is gtp5g's GTP5G_PDI_SRC_INTF (go-gtp5gnl v1.4.6 has no name
// for it); gtp5g picks the uplink or downlink policer by it.
const pdiSrcIntf = 4

// Source interfaces (TS 29.244 §8.2.2).
const (
	srcAccess = 0
	srcCore   = 1
)

// pdrSpec describes a PDR; zero fields are left out.
type pdrSpec struct {
	precedence uint32
	srcIntf    uint8
	ueIP       string // PDI UE IPv4
	fteid      uint32 // PDI F-TEID (with fteidAddr)
	fteidAddr  string
	sdfSrc     string // SDF "permit out ip from sdfSrc to ueIP"
	ohr        bool   // outer header removal GTP-U/UDP/IPv4
	farID      uint32
	qerIDs     []uint32
}

func ipv4Bytes(s string) nl.AttrBytes { return nl.AttrBytes(net.ParseIP(s).To4()) }

func (p pdrSpec) attrs() []nl.Attr {
	attrs := []nl.Attr{
		{Type: gtp5gnl.PDR_PRECEDENCE, Value: nl.AttrU32(p.precedence)},
		{Type: gtp5gnl.PDR_FAR_ID, Value: nl.AttrU32(p.farID)},
	}
	if p.ohr {
		attrs = append(attrs, nl.Attr{Type: gtp5gnl.PDR_OUTER_HEADER_REMOVAL, Value: nl.AttrU8(0)})
	}
	for _, q := range p.qerIDs {
		attrs = append(attrs, nl.Attr{Type: gtp5gnl.PDR_QER_ID, Value: nl.AttrU32(q)})
	}
	pdi := nl.AttrList{{Type: pdiSrcIntf, Value: nl.AttrU8(p.srcIntf)}}
	if p.ueIP != "" {
		pdi = append(pdi, nl.Attr{Type: gtp5gnl.PDI_UE_ADDR_IPV4, Value: ipv4Bytes(p.ueIP)})
	}
	if p.fteid != 0 {
		pdi = append(pdi, nl.Attr{Type: gtp5gnl.PDI_F_TEID, Value: nl.AttrList{
			{Type: gtp5gnl.F_TEID_I_TEID, Value: nl.AttrU32(p.fteid)},
			{Type: gtp5gnl.F_TEID_GTPU_ADDR_IPV4, Value: ipv4Bytes(p.fteidAddr)},
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
				{Type: gtp5gnl.FLOW_DESCRIPTION_SRC_IPV4, Value: ipv4Bytes(p.sdfSrc)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_SRC_MASK, Value: full},
				{Type: gtp5gnl.FLOW_DESCRIPTION_DEST_IPV4, Value: ipv4Bytes(p.ueIP)},
				{Type: gtp5gnl.FLOW_DESCRIPTION_DEST_MASK, Value: full},
			},
		}}})
	}
	return append(attrs, nl.Attr{Type: gtp5gnl.PDR_PDI, Value: pdi})
}

func (g *gtp5gRules) addPDR(t *testing.T, seid uint64, id int, p pdrSpec) {
	t.Helper()
	if err := gtp5gnl.CreatePDROID(g.c, g.link, oid(seid, id), p.attrs()); err != nil {
		t.Fatalf("%s/%s: add PDR seid=%d id=%d: %v", g.ns, g.link.Name, seid, id, err)
	}
}

// remove deletes a PDR, FAR or QER ("pdr", "far", "qer").
func (g *gtp5gRules) remove(t *testing.T, kind string, seid uint64, id int) {
	t.Helper()
	var err error
	switch kind {
	case "pdr":
		err = gtp5gnl.RemovePDROID(g.c, g.link, oid(seid, id))
	case "far":
		err = gtp5gnl.RemoveFAROID(g.c, g.link, oid(seid, id))
	case "qer":
		err = gtp5gnl.RemoveQEROID(g.c, g.link, oid(seid, id))
	default:
		t.Fatalf("remove: unknown rule kind %q", kind)
	}
	if err != nil {
		t.Fatalf("%s/%s: remove %s seid=%d id=%d: %v", g.ns, g.link.Name, kind, seid, id, err)
	}
}
