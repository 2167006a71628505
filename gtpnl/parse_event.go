package gtpnl

import (
	"fmt"

	"github.com/mdlayher/genetlink"
)

// parseEvents decodes gtp5g_qos event messages. Messages of other commands
// (the group carries only events, but be lenient) are skipped.
func parseEvents(msgs []genetlink.Message) ([]Event, error) {
	evs := make([]Event, 0, len(msgs))
	for i, m := range msgs {
		if m.Header.Command != qosCmdEvent {
			continue
		}
		ev, err := parseEvent(m.Data)
		if err != nil {
			return nil, fmt.Errorf("event message %d: %w", i, err)
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// parseEvent decodes one GTP5G_QOS_CMD_EVENT message's attributes: the
// event's own (op, sequence, device), the rule's SEID and id and QoS
// values in gtp5g_qos's numbers, and the rule's state nested in gtp5g's
// own GET attribute numbers (absent when gtp5g dropped the rule after a
// failed update).
func parseEvent(b []byte) (Event, error) {
	var ev Event
	ad, err := newDecoder("event", b)
	if err != nil {
		return ev, err
	}
	var (
		seid         uint64
		id           uint64
		kind, nestTy uint16 // qosAttrPDR/FAR/QER
		ids          int
		qfi          uint8
		flowMark     uint32
		pdrMark      uint32
		nest         []byte
	)
	for ad.Next() {
		switch t := ad.Type(); t {
		case qosAttrEventOp:
			ev.Op = EventOp(ad.Uint8())
		case qosAttrEventSeq:
			ev.Seq = ad.Uint32()
		case qosAttrLink:
			ev.Link = ad.Uint32()
		case qosAttrIfname:
			ev.Ifname = ad.String()
		case qosAttrSEID:
			seid = ad.Uint64()
		case qosAttrPDRID, qosAttrFARID, qosAttrQERID:
			v, err := uintAttr("event rule id", ad.Bytes())
			if err != nil {
				return ev, fmt.Errorf("decode event: %w", err)
			}
			id, ids = v, ids+1
			kind = map[uint16]uint16{qosAttrPDRID: qosAttrPDR, qosAttrFARID: qosAttrFAR, qosAttrQERID: qosAttrQER}[t]
		case qosAttrQFI:
			qfi = ad.Uint8()
		case qosAttrFlowMark:
			flowMark = ad.Uint32()
		case qosAttrPDRMark:
			pdrMark = ad.Uint32()
		case qosAttrPDR, qosAttrFAR, qosAttrQER:
			if nest != nil {
				return ev, fmt.Errorf("decode event: more than one rule nest")
			}
			nestTy, nest = t, ad.Bytes()
		}
	}
	if err := ad.Err(); err != nil {
		return ev, fmt.Errorf("decode event: %w", err)
	}
	if ev.Op < EventAdd || ev.Op > EventDelete {
		return ev, fmt.Errorf("decode event seq %d: unknown operation %d", ev.Seq, uint8(ev.Op))
	}
	if ids != 1 {
		return ev, fmt.Errorf("decode event seq %d: %d rule ids, want exactly 1", ev.Seq, ids)
	}
	if nest == nil {
		if ev.Op != EventDelete {
			return ev, fmt.Errorf("decode event seq %d: %s without the rule's state", ev.Seq, ev.Op)
		}
		ev.IDsOnly = true
	} else if nestTy != kind {
		return ev, fmt.Errorf("decode event seq %d: rule nest %d does not match its id", ev.Seq, nestTy)
	}
	if err := ev.setRule(kind, seid, id, ruleMarks{qfi, flowMark, pdrMark}, nest); err != nil {
		return ev, fmt.Errorf("decode event seq %d: %w", ev.Seq, err)
	}
	if s, i := ev.ruleKey(); s != seid || i != id {
		return ev, fmt.Errorf("decode event seq %d: rule state names SEID %d id %d, the event SEID %d id %d", ev.Seq, s, i, seid, id)
	}
	return ev, nil
}

// ruleMarks are the QoS values an event carries beside the rule's nest.
type ruleMarks struct {
	qfi      uint8
	flowMark uint32
	pdrMark  uint32 // a PDR's own mark; 0 from a module without one
}

// setRule sets the event's rule from its kind (qosAttrPDR, FAR or QER),
// its SEID and id, its QoS values and its nested state (nil: ids only).
func (e *Event) setRule(kind uint16, seid, id uint64, m ruleMarks, nest []byte) error {
	var err error
	switch kind {
	case qosAttrPDR:
		if id > 0xffff {
			return fmt.Errorf("PDR id %d exceeds 16 bits", id)
		}
		p := PDR{SEID: seid, ID: uint16(id)}
		if nest != nil {
			if p, err = parsePDR(nest); err != nil {
				return err
			}
		}
		p.QFI, p.FlowMark, p.PDRMark = m.qfi, m.flowMark, m.pdrMark
		e.PDR = &p
	case qosAttrFAR:
		f := FAR{SEID: seid, ID: uint32(id)}
		if nest != nil {
			if f, err = parseFAR(nest); err != nil {
				return err
			}
		}
		e.FAR = &f
	case qosAttrQER:
		q := QER{SEID: seid, ID: uint32(id)}
		if nest != nil {
			if q, err = parseQER(nest); err != nil {
				return err
			}
		}
		q.FlowMark = m.flowMark
		e.QER = &q
	}
	return nil
}

// ruleKey returns the SEID and id of the event's rule.
func (e Event) ruleKey() (uint64, uint64) {
	switch {
	case e.QER != nil:
		return e.QER.SEID, uint64(e.QER.ID)
	case e.PDR != nil:
		return e.PDR.SEID, uint64(e.PDR.ID)
	case e.FAR != nil:
		return e.FAR.SEID, uint64(e.FAR.ID)
	}
	return 0, 0
}
