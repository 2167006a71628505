package gtpnl

import (
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nlenc"
)

// Small decoding helpers shared by the parseX functions. They never panic:
// a malformed attribute becomes an error.

// uintAttr decodes a native-endian unsigned integer of 1, 2, 4 or 8 bytes.
// gtp5g is not consistent about widths (PDR ids are put as u16 but taken as
// u32; the FAR apply action is u8 or u16), so sizes are accepted by length.
func uintAttr(name string, b []byte) (uint64, error) {
	switch len(b) {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(nlenc.Uint16(b)), nil
	case 4:
		return uint64(nlenc.Uint32(b)), nil
	case 8:
		return nlenc.Uint64(b), nil
	default:
		return 0, fmt.Errorf("attribute %s: unexpected length %d", name, len(b))
	}
}

// ipv4Attr decodes a 4-byte network-order IPv4 address.
func ipv4Attr(name string, b []byte) (netip.Addr, error) {
	if len(b) != 4 {
		return netip.Addr{}, fmt.Errorf("attribute %s: IPv4 address of length %d", name, len(b))
	}
	return netip.AddrFrom4([4]byte(b)), nil
}

// u16ArrayAttr decodes gtp5g's packed native-endian u16 arrays (related PDR ids).
func u16ArrayAttr(name string, b []byte) ([]uint16, error) {
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("attribute %s: u16 array of odd length %d", name, len(b))
	}
	out := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		out = append(out, nlenc.Uint16(b[i:i+2]))
	}
	return out, nil
}

// portRangesAttr decodes gtp5g's packed u32 port ranges (start | end<<16).
func portRangesAttr(name string, b []byte) ([]PortRange, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("attribute %s: port list of length %d", name, len(b))
	}
	out := make([]PortRange, 0, len(b)/4)
	for i := 0; i+3 < len(b); i += 4 {
		v := nlenc.Uint32(b[i : i+4])
		out = append(out, PortRange{Start: uint16(v), End: uint16(v >> 16)})
	}
	return out, nil
}

// newDecoder returns an AttributeDecoder for b, naming what is decoded in
// the error.
func newDecoder(what string, b []byte) (*netlink.AttributeDecoder, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", what, err)
	}
	return ad, nil
}
