package gtpnl

import (
	"testing"

	"github.com/mdlayher/genetlink"
)

var pdrMark7 = []byte{7, 0, 0, 0}

// A GET_PDR record's PDR_MARK (attribute 20) reaches the PDR it names;
// a record without one (a module before mode pdr) leaves it 0, and a
// QER record's PDR_MARK is no QER's business.
func TestParsePDRMarkRecords(t *testing.T) {
	recs, err := parseMarkRecords("PDR flow marks", qosAttrPDRID, []genetlink.Message{
		{Data: cat(attr(qosAttrPDRID, []byte{1, 0}), attr(qosAttrQFI, []byte{9}), attr(qosAttrFlowMark, []byte{3, 0, 0, 0}), attr(qosAttrPDRMark, pdrMark7))},
		{Data: cat(attr(qosAttrPDRID, []byte{2, 0}), attr(qosAttrFlowMark, []byte{3, 0, 0, 0}))},
	})
	if err != nil {
		t.Fatal(err)
	}
	pdrs := []PDR{{ID: 1}, {ID: 2}}
	withPDRMarks(pdrs, recs)
	if p := pdrs[0]; p.PDRMark != 7 || p.FlowMark != 3 || p.QFI != 9 {
		t.Errorf("PDR 1: own mark %d, flow mark %d, QFI %d; want 7, 3, 9", p.PDRMark, p.FlowMark, p.QFI)
	}
	if p := pdrs[1]; p.PDRMark != 0 || p.FlowMark != 3 {
		t.Errorf("PDR 2 (record without PDR_MARK): own mark %d, flow mark %d; want 0, 3", p.PDRMark, p.FlowMark)
	}
}

// A PDR event's PDR_MARK reaches the event's PDR, in a full event and in
// one without the rule's state; events of other rules ignore it.
func TestParseEventPDRMark(t *testing.T) {
	full := cat(attr(qosAttrEventOp, []byte{1}), attr(qosAttrPDRID, []byte{4, 0}), attr(qosAttrQFI, []byte{2}),
		attr(qosAttrFlowMark, []byte{5, 0, 0, 0}), attr(qosAttrPDRMark, pdrMark7), attr(qosAttrPDR, attr(attrPDRID, []byte{4, 0})))
	ev, err := parseEvent(full)
	if err != nil {
		t.Fatal(err)
	}
	if ev.PDR == nil || ev.PDR.PDRMark != 7 || ev.PDR.FlowMark != 5 || ev.PDR.QFI != 2 {
		t.Fatalf("PDR add event: %+v; want own mark 7, flow mark 5, QFI 2", ev.PDR)
	}
	idsOnly := cat(attr(qosAttrEventOp, []byte{3}), attr(qosAttrPDRID, []byte{4, 0}), attr(qosAttrPDRMark, pdrMark7))
	if ev, err = parseEvent(idsOnly); err != nil {
		t.Fatal(err)
	}
	if ev.PDR == nil || ev.PDR.PDRMark != 7 {
		t.Fatalf("PDR delete with ids only: %+v; want own mark 7", ev.PDR)
	}
	old := cat(attr(qosAttrEventOp, []byte{1}), attr(qosAttrPDRID, []byte{4, 0}), attr(qosAttrPDR, attr(attrPDRID, []byte{4, 0})))
	if ev, err = parseEvent(old); err != nil || ev.PDR.PDRMark != 0 {
		t.Fatalf("PDR event without PDR_MARK: %+v, %v; want own mark 0", ev.PDR, err)
	}
	qer := cat(attr(qosAttrEventOp, []byte{1}), attr(qosAttrQERID, id1), attr(qosAttrFlowMark, []byte{5, 0, 0, 0}),
		attr(qosAttrPDRMark, pdrMark7), attr(qosAttrQER, attr(attrQERID, id1)))
	if ev, err = parseEvent(qer); err != nil || ev.QER == nil || ev.QER.FlowMark != 5 || ev.PDR != nil {
		t.Fatalf("QER event with a PDR_MARK: %+v, %v", ev, err)
	}
}
