package gtpnl

import (
	"fmt"

	"github.com/mdlayher/genetlink"
)

// parseFeatures decodes a gtp5g_qos GET_FEATURES reply.
func parseFeatures(msgs []genetlink.Message) (Features, error) {
	if len(msgs) != 1 {
		return 0, fmt.Errorf("decode features: %d messages, want 1", len(msgs))
	}
	ad, err := newDecoder("features", msgs[0].Data)
	if err != nil {
		return 0, err
	}
	var f Features
	seen := false
	for ad.Next() {
		if ad.Type() == qosAttrFeatures {
			f, seen = Features(ad.Uint32()), true
		}
	}
	if err := ad.Err(); err != nil {
		return 0, fmt.Errorf("decode features: %w", err)
	}
	if !seen {
		return 0, fmt.Errorf("decode features: no features attribute")
	}
	return f, nil
}

// parseMarkLayout decodes a gtp5g_qos GET_MARK reply.
func parseMarkLayout(msgs []genetlink.Message) (MarkLayout, error) {
	var l MarkLayout
	if len(msgs) != 1 {
		return l, fmt.Errorf("decode mark mode: %d messages, want 1", len(msgs))
	}
	ad, err := newDecoder("mark mode", msgs[0].Data)
	if err != nil {
		return l, err
	}
	seen := false
	for ad.Next() {
		switch ad.Type() {
		case qosAttrMarkMode:
			l.Mode = MarkMode(ad.Uint8())
			seen = true
		case qosAttrMarkMask:
			l.Mask = ad.Uint32()
		case qosAttrMarkShift:
			l.Shift = ad.Uint8()
		}
	}
	if err := ad.Err(); err != nil {
		return l, fmt.Errorf("decode mark mode: %w", err)
	}
	if !seen {
		return l, fmt.Errorf("decode mark mode: no mark mode attribute")
	}
	return l, nil
}

// parsePolicer decodes a gtp5g_qos GET_POLICER reply.
func parsePolicer(msgs []genetlink.Message) (bool, error) {
	if len(msgs) != 1 {
		return false, fmt.Errorf("decode policer: %d messages, want 1", len(msgs))
	}
	ad, err := newDecoder("policer", msgs[0].Data)
	if err != nil {
		return false, err
	}
	var on, seen bool
	for ad.Next() {
		if ad.Type() == qosAttrPolicer {
			v := ad.Uint8()
			if v > 1 {
				return false, fmt.Errorf("decode policer: value %d, want 0 or 1", v)
			}
			on, seen = v == 1, true
		}
	}
	if err := ad.Err(); err != nil {
		return false, fmt.Errorf("decode policer: %w", err)
	}
	if !seen {
		return false, fmt.Errorf("decode policer: no policer attribute")
	}
	return on, nil
}
