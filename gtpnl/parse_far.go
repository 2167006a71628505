package gtpnl

import (
	"fmt"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// parseFARs decodes the messages of a GET_FAR dump (or reply), one FAR each.
func parseFARs(msgs []genetlink.Message) ([]FAR, error) {
	fars := make([]FAR, 0, len(msgs))
	for i, m := range msgs {
		f, err := parseFAR(m.Data)
		if err != nil {
			return nil, fmt.Errorf("FAR message %d: %w", i, err)
		}
		fars = append(fars, f)
	}
	return fars, nil
}

// parseFAR decodes one FAR's attributes.
func parseFAR(b []byte) (FAR, error) {
	var f FAR
	ad, err := newDecoder("FAR", b)
	if err != nil {
		return f, err
	}
	seenID := false
	for ad.Next() {
		switch ad.Type() {
		case attrFARID:
			f.ID = ad.Uint32()
			seenID = true
		case attrFARSEID:
			f.SEID = ad.Uint64()
		case attrFARApplyAction:
			// u8 or u16, depending on gtp5g's far action API version.
			v, err := uintAttr("FAR apply action", ad.Bytes())
			if err != nil {
				return f, err
			}
			if v > 0xffff {
				return f, fmt.Errorf("decode FAR: apply action %#x exceeds 16 bits", v)
			}
			f.ApplyAction = ApplyAction(v)
		case attrFARForwardingParam:
			fp := new(ForwardingParameters)
			ad.Nested(decodeForwardingParameters(fp))
			f.Forwarding = fp
		case attrFARRelatedToPDR:
			ids, err := u16ArrayAttr("FAR related PDRs", ad.Bytes())
			if err != nil {
				return f, err
			}
			f.RelatedPDRs = ids
		}
	}
	if err := ad.Err(); err != nil {
		return f, fmt.Errorf("decode FAR %d: %w", f.ID, err)
	}
	if !seenID {
		return f, fmt.Errorf("decode FAR: no FAR id attribute")
	}
	return f, nil
}

func decodeForwardingParameters(fp *ForwardingParameters) func(*netlink.AttributeDecoder) error {
	return func(ad *netlink.AttributeDecoder) error {
		for ad.Next() {
			switch ad.Type() {
			case attrFwdOuterHeaderCreation:
				ohc := new(OuterHeaderCreation)
				ad.Nested(decodeOuterHeaderCreation(ohc))
				fp.OuterHeaderCreation = ohc
			case attrFwdForwardingPolicy:
				// Raw identifier bytes (not NUL-terminated).
				fp.ForwardingPolicy = string(ad.Bytes())
			case attrFwdTOSTC:
				fp.TransportLevelMarking = ad.Uint8()
			}
		}
		return nil
	}
}

func decodeOuterHeaderCreation(o *OuterHeaderCreation) func(*netlink.AttributeDecoder) error {
	return func(ad *netlink.AttributeDecoder) error {
		for ad.Next() {
			switch ad.Type() {
			case attrOHCDescription:
				o.Description = ad.Uint16()
			case attrOHCTEID:
				o.TEID = ad.Uint32()
			case attrOHCPeerIPv4:
				a, err := ipv4Attr("outer header creation peer", ad.Bytes())
				if err != nil {
					return err
				}
				o.Peer = a
			case attrOHCPort:
				o.Port = ad.Uint16()
			}
		}
		return nil
	}
}
