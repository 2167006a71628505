package gtpnl

import (
	"fmt"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// parseQERs decodes the messages of a GET_QER dump (or reply), one QER each.
func parseQERs(msgs []genetlink.Message) ([]QER, error) {
	qers := make([]QER, 0, len(msgs))
	for i, m := range msgs {
		q, err := parseQER(m.Data)
		if err != nil {
			return nil, fmt.Errorf("QER message %d: %w", i, err)
		}
		qers = append(qers, q)
	}
	return qers, nil
}

// parseQER decodes one QER's attributes.
func parseQER(b []byte) (QER, error) {
	var q QER
	ad, err := newDecoder("QER", b)
	if err != nil {
		return q, err
	}
	var mbr, gbr rawBitrate
	seenID := false
	for ad.Next() {
		switch ad.Type() {
		case attrQERID:
			q.ID = ad.Uint32()
			seenID = true
		case attrQERSEID:
			q.SEID = ad.Uint64()
		case attrQERGate:
			q.Gate = Gate(ad.Uint8())
		case attrQERMBR:
			ad.Nested(mbr.decode)
		case attrQERGBR:
			ad.Nested(gbr.decode)
		case attrQERCorrID:
			q.CorrelationID = ad.Uint32()
		case attrQERRQI:
			q.RQI = ad.Uint8() != 0
		case attrQERQFI:
			q.QFI = ad.Uint8()
		case attrQERPPI:
			q.PPI = ad.Uint8()
		case attrQERRCSR:
			q.RCSR = ad.Uint8()
		case attrQERRelatedToPDR:
			ids, err := u16ArrayAttr("QER related PDRs", ad.Bytes())
			if err != nil {
				return q, err
			}
			q.RelatedPDRs = ids
		}
	}
	if err := ad.Err(); err != nil {
		return q, fmt.Errorf("decode QER %d: %w", q.ID, err)
	}
	if !seenID {
		return q, fmt.Errorf("decode QER: no QER id attribute")
	}
	q.MBR = mbr.bitrate()
	q.GBR = gbr.bitrate()
	return q, nil
}

// rawBitrate holds the four halves of a nested MBR or GBR attribute.
type rawBitrate struct {
	ulHigh, dlHigh uint32
	ulLow, dlLow   uint8
}

func (r *rawBitrate) decode(ad *netlink.AttributeDecoder) error {
	for ad.Next() {
		switch ad.Type() {
		case attrBRULHigh32:
			r.ulHigh = ad.Uint32()
		case attrBRULLow8:
			r.ulLow = ad.Uint8()
		case attrBRDLHigh32:
			r.dlHigh = ad.Uint32()
		case attrBRDLLow8:
			r.dlLow = ad.Uint8()
		}
	}
	return nil
}

func (r rawBitrate) bitrate() Bitrate {
	return Bitrate{Uplink: kbpsToBps(r.ulHigh, r.ulLow), Downlink: kbpsToBps(r.dlHigh, r.dlLow)}
}

// kbpsToBps joins gtp5g's high-32/low-8 halves of a PFCP kbit/s value and
// converts it to bit/s. The result fits in 64 bits (2^40 kbit/s * 1000).
func kbpsToBps(high32 uint32, low8 uint8) uint64 {
	return (uint64(high32)<<8 | uint64(low8)) * 1000
}
