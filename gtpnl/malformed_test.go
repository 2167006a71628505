package gtpnl

import (
	"strings"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// attr encodes one raw attribute (with padding).
func attr(typ uint16, payload []byte) []byte {
	n := 4 + len(payload)
	b := []byte{byte(n), byte(n >> 8), byte(typ), byte(typ >> 8)}
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

var id1 = []byte{1, 0, 0, 0}

// Malformed replies decode to errors that name the rule, never panics.
// The same inputs are kept as fuzz corpus under testdata/fuzz.
func TestParseMalformed(t *testing.T) {
	tests := []struct {
		name  string
		parse func([]byte) error
		in    []byte
		want  string
	}{
		{"QER without id", func(b []byte) error { _, err := parseQER(b); return err }, attr(attrQERQFI, []byte{2}), "no QER id"},
		{"QER odd related-PDR array", func(b []byte) error { _, err := parseQER(b); return err },
			cat(attr(attrQERID, id1), attr(attrQERRelatedToPDR, []byte{1, 0, 2})), "odd length"},
		{"QER short MBR half", func(b []byte) error { _, err := parseQER(b); return err },
			cat(attr(attrQERID, id1), attr(attrQERMBR|netlink.Nested, attr(attrBRULHigh32, []byte{1, 2}))), "decode QER 1"},
		{"PDR 3-byte id", func(b []byte) error { _, err := parsePDR(b); return err }, attr(attrPDRID, []byte{1, 2, 3}), "unexpected length 3"},
		{"PDR id above 16 bits", func(b []byte) error { _, err := parsePDR(b); return err }, attr(attrPDRID, []byte{0, 0, 1, 0}), "exceeds 16 bits"},
		{"PDR short UE address", func(b []byte) error { _, err := parsePDR(b); return err },
			cat(attr(attrPDRID, []byte{4, 0}), attr(attrPDRPDI|netlink.Nested, attr(attrPDIUEAddrIPv4, []byte{10, 60}))), "IPv4 address of length 2"},
		{"PDR bad port list", func(b []byte) error { _, err := parsePDR(b); return err },
			cat(attr(attrPDRID, []byte{4, 0}), attr(attrPDRPDI, attr(attrPDISDFFilter, attr(attrSDFFlowDescription, attr(attrFDDestPort, []byte{1, 2, 3, 4, 5}))))), "port list of length 5"},
		{"FAR 3-byte action", func(b []byte) error { _, err := parseFAR(b); return err },
			cat(attr(attrFARID, id1), attr(attrFARApplyAction, []byte{2, 0, 0})), "unexpected length 3"},
		{"FAR short peer", func(b []byte) error { _, err := parseFAR(b); return err },
			cat(attr(attrFARID, id1), attr(attrFARForwardingParam, attr(attrFwdOuterHeaderCreation, attr(attrOHCPeerIPv4, []byte{1})))), "IPv4 address of length 1"},
		{"event with two rule nests", func(b []byte) error { _, err := parseEvent(b); return err },
			cat(attr(qosAttrEventOp, []byte{1}), attr(qosAttrQERID, id1), attr(qosAttrQER, attr(attrQERID, id1)), attr(qosAttrFAR, attr(attrFARID, id1))), "more than one rule nest"},
		{"event with two rule ids", func(b []byte) error { _, err := parseEvent(b); return err },
			cat(attr(qosAttrEventOp, []byte{3}), attr(qosAttrQERID, id1), attr(qosAttrFARID, id1)), "2 rule ids"},
		{"event with unknown op", func(b []byte) error { _, err := parseEvent(b); return err },
			cat(attr(qosAttrEventOp, []byte{9}), attr(qosAttrQERID, id1), attr(qosAttrQER, attr(attrQERID, id1))), "unknown operation 9"},
		{"event with a broken nest", func(b []byte) error { _, err := parseEvent(b); return err },
			cat(attr(qosAttrEventOp, []byte{1}), attr(qosAttrPDRID, []byte{1, 0}), attr(qosAttrPDR, attr(attrPDRPrecedence, id1))), "no PDR id"},
		{"event nest of another rule kind", func(b []byte) error { _, err := parseEvent(b); return err },
			cat(attr(qosAttrEventOp, []byte{1}), attr(qosAttrQERID, id1), attr(qosAttrFAR, attr(attrFARID, id1))), "does not match its id"},
		{"event nest of another rule", func(b []byte) error { _, err := parseEvent(b); return err },
			cat(attr(qosAttrEventOp, []byte{1}), attr(qosAttrQERID, []byte{2, 0, 0, 0}), attr(qosAttrQER, attr(attrQERID, id1))), "rule state names SEID 0 id 1"},
		{"add event without the rule", func(b []byte) error { _, err := parseEvent(b); return err },
			cat(attr(qosAttrEventOp, []byte{1}), attr(qosAttrQERID, id1)), "add without the rule's state"},
		{"record without id", func(b []byte) error {
			_, err := parseMarkRecords("PDR flow marks", qosAttrPDRID, []genetlink.Message{{Data: b}})
			return err
		}, attr(qosAttrFlowMark, id1), "no rule id"},
		{"version without string", func(b []byte) error { _, err := parseVersion([]genetlink.Message{{Data: b}}); return err },
			attr(1, []byte{15, 0, 0, 0}), "no version string"},
		{"features without bitmap", func(b []byte) error { _, err := parseFeatures([]genetlink.Message{{Data: b}}); return err },
			attr(qosAttrMarkMode, []byte{1}), "no features attribute"},
		{"truncated attribute", func(b []byte) error { _, err := parseQER(b); return err }, []byte{8, 0, 3, 0, 1}, "decode QER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.parse(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}
