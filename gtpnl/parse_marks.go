package gtpnl

import (
	"fmt"

	"github.com/mdlayher/genetlink"
)

// markRecord is one record of a gtp5g_qos GET_PDR or GET_QER dump: the
// QoS values of one rule, which gtp5g's own dumps do not carry.
type markRecord struct {
	link     uint32
	key      [2]uint64 // SEID, rule id
	qfi      uint8     // PDR records only
	flowMark uint32
	pdrMark  uint32 // PDR records only: the PDR's own mark (0: the module has none)
}

// parseMarkRecords decodes a gtp5g_qos GET_PDR (idAttr qosAttrPDRID) or
// GET_QER (qosAttrQERID) dump.
func parseMarkRecords(what string, idAttr uint16, msgs []genetlink.Message) ([]markRecord, error) {
	recs := make([]markRecord, 0, len(msgs))
	for i, m := range msgs {
		ad, err := newDecoder(what, m.Data)
		if err != nil {
			return nil, fmt.Errorf("%s message %d: %w", what, i, err)
		}
		var r markRecord
		seenID := false
		for ad.Next() {
			switch ad.Type() {
			case qosAttrLink:
				r.link = ad.Uint32()
			case qosAttrSEID:
				r.key[0] = ad.Uint64()
			case idAttr:
				v, err := uintAttr(what+" id", ad.Bytes())
				if err != nil {
					return nil, fmt.Errorf("%s message %d: %w", what, i, err)
				}
				r.key[1], seenID = v, true
			case qosAttrQFI:
				r.qfi = ad.Uint8()
			case qosAttrFlowMark:
				r.flowMark = ad.Uint32()
			case qosAttrPDRMark:
				r.pdrMark = ad.Uint32()
			}
		}
		if err := ad.Err(); err != nil {
			return nil, fmt.Errorf("%s message %d: decode: %w", what, i, err)
		}
		if !seenID {
			return nil, fmt.Errorf("%s message %d: no rule id attribute", what, i)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// recordIndex maps (SEID, id) to the first record of that key. gtp5g's
// own dumps do not say which device a rule is on, so rules with the same
// SEID and id on two gtp5g devices of one namespace cannot be told apart:
// both get the first record's values.
func recordIndex(recs []markRecord) map[[2]uint64]markRecord {
	m := make(map[[2]uint64]markRecord, len(recs))
	for _, r := range recs {
		if _, ok := m[r.key]; !ok {
			m[r.key] = r
		}
	}
	return m
}

// withPDRMarks sets each PDR's QFI, flow mark and own mark from gtp5g_qos
// records.
func withPDRMarks(pdrs []PDR, recs []markRecord) {
	idx := recordIndex(recs)
	for i := range pdrs {
		if r, ok := idx[pdrKey(&pdrs[i])]; ok {
			pdrs[i].QFI, pdrs[i].FlowMark, pdrs[i].PDRMark = r.qfi, r.flowMark, r.pdrMark
		}
	}
}

// withQERMarks sets each QER's flow mark from gtp5g_qos records.
func withQERMarks(qers []QER, recs []markRecord) {
	idx := recordIndex(recs)
	for i := range qers {
		if r, ok := idx[qerKey(&qers[i])]; ok {
			qers[i].FlowMark = r.flowMark
		}
	}
}
