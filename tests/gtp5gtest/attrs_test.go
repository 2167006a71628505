package gtp5gtest

import (
	"testing"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/google/go-cmp/cmp"
	"github.com/khirono/go-nl"
	"github.com/mdlayher/netlink"
)

// tlv is one decoded attribute: its type and either raw bytes or children.
type tlv struct {
	Type uint16
	Data []byte
	Kids []tlv
}

// decode encodes attrs the way go-gtp5gnl sends them and decodes the
// bytes back with mdlayher/netlink, descending into the types in nested.
func decode(t *testing.T, attrs []nl.Attr, nested map[uint16]bool) []tlv {
	t.Helper()
	l := nl.AttrList(attrs)
	b := make([]byte, l.Len())
	if _, err := l.Encode(b); err != nil {
		t.Fatalf("encode: %v", err)
	}
	return decodeBytes(t, b, nested)
}

func decodeBytes(t *testing.T, b []byte, nested map[uint16]bool) []tlv {
	t.Helper()
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	var out []tlv
	for ad.Next() {
		typ := ad.Type() &^ 0x8000 // NLA_F_NESTED
		if nested[typ] {
			out = append(out, tlv{Type: typ, Kids: decodeBytes(t, ad.Bytes(), nil)})
			continue
		}
		out = append(out, tlv{Type: typ, Data: ad.Bytes()})
	}
	if err := ad.Err(); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return out
}

func TestQERAttrsSplitKbpsIntoHigh32Low8(t *testing.T) {
	// 18000 kbit/s = 70<<8 | 80; 15000 = 58<<8 | 152.
	got := decode(t, QER{QFI: 2, GBRKbps: 15000, MBRKbps: 18000}.Attrs(),
		map[uint16]bool{gtp5gnl.QER_MBR: true, gtp5gnl.QER_GBR: true})
	rate := func(typ uint16, hi uint32, lo uint8) tlv {
		return tlv{Type: typ, Kids: []tlv{
			{Type: 1, Data: []byte{byte(hi), byte(hi >> 8), 0, 0}}, {Type: 2, Data: []byte{lo}},
			{Type: 3, Data: []byte{byte(hi), byte(hi >> 8), 0, 0}}, {Type: 4, Data: []byte{lo}},
		}}
	}
	want := []tlv{
		{Type: gtp5gnl.QER_GATE, Data: []byte{0}},
		rate(gtp5gnl.QER_MBR, 70, 80),
		rate(gtp5gnl.QER_GBR, 58, 152),
		{Type: gtp5gnl.QER_QFI, Data: []byte{2}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("QER attributes (-want +got):\n%s", d)
	}
}

func TestPDRAttrsLeaveOutZeroFields(t *testing.T) {
	nested := map[uint16]bool{gtp5gnl.PDR_PDI: true}
	got := decode(t, PDR{Precedence: 32, SrcIntf: SrcAccess, FTEID: 200, FTEIDAddr: "10.100.0.1", OHR: true,
		FARID: 4, QERIDs: []uint32{1, 5}}.Attrs(), nested)
	types := func(ts []tlv) []uint16 {
		var out []uint16
		for _, x := range ts {
			out = append(out, x.Type)
		}
		return out
	}
	want := []uint16{gtp5gnl.PDR_PRECEDENCE, gtp5gnl.PDR_FAR_ID, gtp5gnl.PDR_OUTER_HEADER_REMOVAL,
		gtp5gnl.PDR_QER_ID, gtp5gnl.PDR_QER_ID, gtp5gnl.PDR_PDI}
	if d := cmp.Diff(want, types(got)); d != "" {
		t.Fatalf("uplink PDR attribute types (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]uint16{PDISrcIntf, gtp5gnl.PDI_F_TEID}, types(got[len(got)-1].Kids)); d != "" {
		t.Fatalf("uplink PDI attribute types (-want +got):\n%s", d)
	}

	got = decode(t, PDR{Precedence: 32, SrcIntf: SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.2", FARID: 1}.Attrs(), nested)
	want = []uint16{gtp5gnl.PDR_PRECEDENCE, gtp5gnl.PDR_FAR_ID, gtp5gnl.PDR_PDI}
	if d := cmp.Diff(want, types(got)); d != "" {
		t.Fatalf("downlink PDR attribute types (-want +got):\n%s", d)
	}
	pdi := got[len(got)-1].Kids
	if d := cmp.Diff([]uint16{PDISrcIntf, gtp5gnl.PDI_UE_ADDR_IPV4, gtp5gnl.PDI_SDF_FILTER}, types(pdi)); d != "" {
		t.Fatalf("downlink PDI attribute types (-want +got):\n%s", d)
	}
	if pdi[0].Data[0] != SrcCore || string(pdi[1].Data) != "\x0a\x3c\x00\x01" {
		t.Fatalf("downlink PDI: source interface %v, UE address %v", pdi[0].Data, pdi[1].Data)
	}
}

func TestFARForwardOuterHeaderOnlyWithTEID(t *testing.T) {
	nested := map[uint16]bool{gtp5gnl.FAR_FORWARDING_PARAMETER: true}
	if got := decode(t, FARForward(0, ""), nested); len(got) != 1 || got[0].Type != gtp5gnl.FAR_APPLY_ACTION {
		t.Fatalf("FAR without TEID: %+v; want the apply action only", got)
	}
	got := decode(t, FARForward(100, "10.100.0.2"), nested)
	if len(got) != 2 || got[1].Type != gtp5gnl.FAR_FORWARDING_PARAMETER || len(got[1].Kids) != 1 {
		t.Fatalf("FAR with TEID: %+v; want apply action and one forwarding parameter", got)
	}
	ohc := decodeBytes(t, got[1].Kids[0].Data, nil)
	want := []tlv{
		{Type: gtp5gnl.OUTER_HEADER_CREATION_DESCRIPTION, Data: []byte{0x00, 0x01}},
		{Type: gtp5gnl.OUTER_HEADER_CREATION_O_TEID, Data: []byte{100, 0, 0, 0}},
		{Type: gtp5gnl.OUTER_HEADER_CREATION_PEER_ADDR_IPV4, Data: []byte{10, 100, 0, 2}},
		{Type: gtp5gnl.OUTER_HEADER_CREATION_PORT, Data: []byte{0x68, 0x08}},
	}
	if d := cmp.Diff(want, ohc); d != "" {
		t.Fatalf("outer header creation (-want +got):\n%s", d)
	}
}

func TestOIDLeavesOutSEIDZero(t *testing.T) {
	if got := OID(0, 3); len(got) != 1 || got[0] != 3 {
		t.Errorf("OID(0, 3) = %v, want {3}", got)
	}
	if got := OID(7, 3); len(got) != 2 || got[0] != 7 || got[1] != 3 {
		t.Errorf("OID(7, 3) = %v, want {7, 3}", got)
	}
}
