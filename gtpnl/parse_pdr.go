package gtpnl

import (
	"fmt"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// parsePDRs decodes the messages of a GET_PDR dump (or reply), one PDR each.
func parsePDRs(msgs []genetlink.Message) ([]PDR, error) {
	pdrs := make([]PDR, 0, len(msgs))
	for i, m := range msgs {
		p, err := parsePDR(m.Data)
		if err != nil {
			return nil, fmt.Errorf("PDR message %d: %w", i, err)
		}
		pdrs = append(pdrs, p)
	}
	return pdrs, nil
}

// parsePDR decodes one PDR's attributes.
func parsePDR(b []byte) (PDR, error) {
	var p PDR
	ad, err := newDecoder("PDR", b)
	if err != nil {
		return p, err
	}
	seenID := false
	for ad.Next() {
		switch ad.Type() {
		case attrPDRID:
			// gtp5g puts the id as u16 in replies but takes u32 on add.
			v, err := uintAttr("PDR id", ad.Bytes())
			if err != nil {
				return p, err
			}
			if v > 0xffff {
				return p, fmt.Errorf("decode PDR: id %d exceeds 16 bits", v)
			}
			p.ID = uint16(v)
			seenID = true
		case attrPDRSEID:
			p.SEID = ad.Uint64()
		case attrPDRPrecedence:
			p.Precedence = ad.Uint32()
		case attrOuterHeaderRemoval:
			v := ad.Uint8()
			p.OuterHeaderRemoval = &v
		case attrPDRFARID:
			p.FARID = ad.Uint32()
		case attrPDRQERID:
			p.QERIDs = append(p.QERIDs, ad.Uint32())
		case attrPDRURRID:
			p.URRIDs = append(p.URRIDs, ad.Uint32())
		case attrPDRRoleAddrIPv4:
			a, err := ipv4Attr("PDR role address", ad.Bytes())
			if err != nil {
				return p, err
			}
			p.RoleAddr = a
		case attrPDRPDI:
			ad.Nested(decodePDI(&p.PDI))
		}
	}
	if err := ad.Err(); err != nil {
		return p, fmt.Errorf("decode PDR %d: %w", p.ID, err)
	}
	if !seenID {
		return p, fmt.Errorf("decode PDR: no PDR id attribute")
	}
	return p, nil
}

func decodePDI(pdi *PDI) func(*netlink.AttributeDecoder) error {
	return func(ad *netlink.AttributeDecoder) error {
		for ad.Next() {
			switch ad.Type() {
			case attrPDISrcIntf:
				v := Interface(ad.Uint8())
				pdi.SourceInterface = &v
			case attrPDIUEAddrIPv4:
				a, err := ipv4Attr("PDI UE address", ad.Bytes())
				if err != nil {
					return err
				}
				pdi.UEAddr = a
			case attrPDIFTEID:
				f := new(FTEID)
				ad.Nested(decodeFTEID(f))
				pdi.FTEID = f
			case attrPDISDFFilter:
				s := new(SDFFilter)
				ad.Nested(decodeSDFFilter(s))
				pdi.SDF = s
			case attrPDIFramedRoute:
				ad.Nested(func(nad *netlink.AttributeDecoder) error {
					for nad.Next() {
						pdi.FramedRoutes = append(pdi.FramedRoutes, nad.String())
					}
					return nil
				})
			}
		}
		return nil
	}
}

func decodeFTEID(f *FTEID) func(*netlink.AttributeDecoder) error {
	return func(ad *netlink.AttributeDecoder) error {
		for ad.Next() {
			switch ad.Type() {
			case attrFTEIDTEID:
				// Put as host-order u32 (ntohl of the wire TEID).
				f.TEID = ad.Uint32()
			case attrFTEIDAddrIPv4:
				a, err := ipv4Attr("F-TEID address", ad.Bytes())
				if err != nil {
					return err
				}
				f.Addr = a
			}
		}
		return nil
	}
}

func decodeSDFFilter(s *SDFFilter) func(*netlink.AttributeDecoder) error {
	return func(ad *netlink.AttributeDecoder) error {
		for ad.Next() {
			switch ad.Type() {
			case attrSDFFlowDescription:
				fd := new(FlowDescription)
				ad.Nested(decodeFlowDescription(fd))
				s.Rule = fd
			case attrSDFTOSTrafficClass:
				s.TOSTrafficClass = ad.Uint16()
			case attrSDFSPI:
				s.SPI = ad.Uint32()
			case attrSDFFlowLabel:
				s.FlowLabel = ad.Uint32()
			case attrSDFFilterID:
				s.FilterID = ad.Uint32()
			}
		}
		return nil
	}
}

func decodeFlowDescription(fd *FlowDescription) func(*netlink.AttributeDecoder) error {
	return func(ad *netlink.AttributeDecoder) error {
		var err error
		for ad.Next() {
			switch ad.Type() {
			case attrFDAction:
				fd.Action = ad.Uint8()
			case attrFDDirection:
				fd.Direction = ad.Uint8()
			case attrFDProtocol:
				fd.Protocol = ad.Uint8()
			case attrFDSrcIPv4:
				fd.Src, err = ipv4Attr("flow description source", ad.Bytes())
			case attrFDSrcMask:
				fd.SrcMask, err = ipv4Attr("flow description source mask", ad.Bytes())
			case attrFDDestIPv4:
				fd.Dst, err = ipv4Attr("flow description destination", ad.Bytes())
			case attrFDDestMask:
				fd.DstMask, err = ipv4Attr("flow description destination mask", ad.Bytes())
			case attrFDSrcPort:
				fd.SrcPorts, err = portRangesAttr("flow description source ports", ad.Bytes())
			case attrFDDestPort:
				fd.DstPorts, err = portRangesAttr("flow description destination ports", ad.Bytes())
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}
