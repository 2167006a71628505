package vm

import (
	"errors"
	"os"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
)

// gtp5g_qos numbers of the PDR's own mark (mark mode pdr).
const (
	qosCmdGetPDR    = 6
	qosAttrPDRID    = 9
	qosAttrFlowMark = 12
	qosAttrPDRMark  = 20
	qosMarkModePDR  = "pdr"
)

// pdrMarkRecord is one gtp5g_qos GET_PDR record as this test reads it.
type pdrMarkRecord struct{ flowMark, pdrMark uint32 }

// dumpPDRMarks dumps gtp5g_qos GET_PDR in the root namespace, by PDR id.
func dumpPDRMarks(t *testing.T, abi seriesABI) map[uint16]pdrMarkRecord {
	t.Helper()
	c, err := genetlink.Dial(nil)
	if err != nil {
		t.Fatalf("generic netlink: %v", err)
	}
	defer c.Close()
	msgs, err := c.Execute(genetlink.Message{Header: genetlink.Header{Command: qosCmdGetPDR, Version: abi.family.Version}},
		abi.family.ID, netlink.Request|netlink.Dump)
	if err != nil {
		t.Fatalf("gtp5g_qos GET_PDR dump: %v", err)
	}
	out := map[uint16]pdrMarkRecord{}
	for _, m := range msgs {
		a := attrsOf(m.Data)
		if len(a[qosAttrPDRID]) != 2 || len(a[qosAttrPDRMark]) != 4 {
			t.Fatalf("GET_PDR record without a PDR id or PDR_MARK (attribute 20): %v", a)
		}
		id := uint16(a[qosAttrPDRID][0]) | uint16(a[qosAttrPDRID][1])<<8
		out[id] = pdrMarkRecord{flowMark: le32(a[qosAttrFlowMark]), pdrMark: le32(a[qosAttrPDRMark])}
	}
	return out
}

func le32(b []byte) uint32 {
	if len(b) != 4 {
		return 0
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// TestGtp5gSeriesPDRMark: free5GC's SMF lists a non-GBR flow's QERs as
// [session AMBR QER, flow QER], so in mode flow every non-GBR flow of a
// session takes the AMBR QER's mark. In mode pdr each PDR leaves N3 with
// a mark of its own, distinct from every other PDR's and QER's, which the
// GET_PDR dump reports as PDR_MARK; a mode value past pdr is refused.
func TestGtp5gSeriesPDRMark(t *testing.T) {
	abi := requireSeries(t)
	if abi.legacy {
		t.Skip("the series' first revision has no mark mode pdr")
	}
	l := newGtp5gLab(t)
	l.programRAN(t)
	ambr := gtp5gtest.QER{QFI: 9, MBRKbps: 40000}
	l.upf.AddQER(t, 1, 1, ambr)
	l.upf.AddQER(t, 1, 2, flowA)
	l.upf.AddQER(t, 1, 3, flowB)
	l.upf.AddFAR(t, 1, 1, gtp5gtest.FARForward(100, "10.100.0.2"))
	l.upf.AddPDR(t, 1, 1, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.2", FARID: 1, QERIDs: []uint32{1, 2}})
	l.upf.AddPDR(t, 1, 2, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.3", FARID: 1, QERIDs: []uint32{1, 3}})

	recs := dumpPDRMarks(t, abi)
	p1, p2 := recs[1], recs[2]
	t.Logf("GET_PDR: PDR 1 flow mark %#x own mark %#x; PDR 2 flow mark %#x own mark %#x", p1.flowMark, p1.pdrMark, p2.flowMark, p2.pdrMark)
	if p1.pdrMark == 0 || p2.pdrMark == 0 || p1.pdrMark == p2.pdrMark || p1.pdrMark > 0xFFFFFF || p2.pdrMark > 0xFFFFFF {
		t.Fatalf("PDR marks %#x and %#x: want two distinct values in 1..0xFFFFFF", p1.pdrMark, p2.pdrMark)
	}
	if p1.pdrMark == p1.flowMark || p2.pdrMark == p1.flowMark {
		t.Fatalf("a PDR mark equals the AMBR QER's flow mark %#x: PDRs and QERs share the mark space", p1.flowMark)
	}
	observe := []uint32{p1.pdrMark, p2.pdrMark, p1.flowMark}

	setMarkModeProc(t, "flow")
	fa := marksOnN3(t, "flow A, mode flow", observe, markFieldMask, l.sA, l.ueA, pktsA)
	fb := marksOnN3(t, "flow B, mode flow", observe, markFieldMask, l.sB, l.ueB, pktsB)
	if fa[p1.flowMark] == pktsA && fb[p1.flowMark] == pktsB {
		t.Logf("mode flow: both flows take the AMBR QER's mark %#x, as free5GC's QER order makes them", p1.flowMark)
	}

	setMarkModeProc(t, qosMarkModePDR)
	if got := readProc(t, "qos_mark"); got != "pdr\n" {
		t.Errorf("/proc/gtp5g/qos_mark in mode pdr reads %q, want \"pdr\\n\"", got)
	}
	a := marksOnN3(t, "flow A, mode pdr", observe, markFieldMask, l.sA, l.ueA, pktsA)
	b := marksOnN3(t, "flow B, mode pdr", observe, markFieldMask, l.sB, l.ueB, pktsB)
	if len(a) != 1 || a[p1.pdrMark] != pktsA {
		t.Errorf("mode pdr: flow A left N3 with marks %v; want all %d with PDR 1's mark %#x", a, pktsA, p1.pdrMark)
	}
	if len(b) != 1 || b[p2.pdrMark] != pktsB {
		t.Errorf("mode pdr: flow B left N3 with marks %v; want all %d with PDR 2's mark %#x", b, pktsB, p2.pdrMark)
	}
	if err := writeProcErr("qos_mark", "4\n"); !errors.Is(err, unix.EINVAL) {
		t.Errorf("writing 4 to /proc/gtp5g/qos_mark: %v, want EINVAL", err)
	}
}

// writeProcErr writes s to /proc/gtp5g/name and returns the error.
func writeProcErr(name, s string) error {
	return os.WriteFile("/proc/gtp5g/"+name, []byte(s), 0o644)
}
