package gtpnl

import (
	"fmt"

	"github.com/mdlayher/genetlink"
)

// parseEvents decodes QoS event messages. Messages of other commands (the
// group carries only events, but be lenient) are skipped.
func parseEvents(msgs []genetlink.Message) ([]Event, error) {
	evs := make([]Event, 0, len(msgs))
	for i, m := range msgs {
		if m.Header.Command != cmdQoSEvent {
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

// parseEvent decodes one GTP5G_CMD_QOS_EVENT message's attributes.
func parseEvent(b []byte) (Event, error) {
	var ev Event
	ad, err := newDecoder("event", b)
	if err != nil {
		return ev, err
	}
	objects := 0
	for ad.Next() {
		switch ad.Type() {
		case attrEventOp:
			ev.Op = EventOp(ad.Uint8())
		case attrEventSeq:
			ev.Seq = ad.Uint32()
		case attrLink:
			ev.Link = ad.Uint32()
		case attrEventIfname:
			ev.Ifname = ad.String()
		case attrEventQER:
			q, err := parseQER(ad.Bytes())
			if err != nil {
				return ev, fmt.Errorf("decode event: %w", err)
			}
			ev.QER = &q
			objects++
		case attrEventPDR:
			p, err := parsePDR(ad.Bytes())
			if err != nil {
				return ev, fmt.Errorf("decode event: %w", err)
			}
			ev.PDR = &p
			objects++
		case attrEventFAR:
			f, err := parseFAR(ad.Bytes())
			if err != nil {
				return ev, fmt.Errorf("decode event: %w", err)
			}
			ev.FAR = &f
			objects++
		}
	}
	if err := ad.Err(); err != nil {
		return ev, fmt.Errorf("decode event: %w", err)
	}
	if ev.Op < EventAdd || ev.Op > EventDelete {
		return ev, fmt.Errorf("decode event seq %d: unknown operation %d", ev.Seq, uint8(ev.Op))
	}
	if objects != 1 {
		return ev, fmt.Errorf("decode event seq %d: %d rule objects, want exactly 1", ev.Seq, objects)
	}
	return ev, nil
}
