package vm

import (
	"errors"
	"os"
	"testing"
	"time"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
)

// TestGtp5gSeriesFailedPDRAddMark: a PDR add that fails holds no mark.
// The mark of a new PDR is taken before its attributes are checked; the
// series gave it back only after the failed PDR's grace period, so a run
// of failed adds held marks and the next PDR got a higher one.
func TestGtp5gSeriesFailedPDRAddMark(t *testing.T) {
	abi := requireSeriesFixes(t)
	l := newGtp5gLab(t)
	// Marks earlier tests freed reach the allocator after a grace period.
	time.Sleep(time.Second)
	l.upf.AddFAR(t, 1, 1, gtp5gtest.FARForward(100, "10.100.0.2"))
	good := gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.2", FARID: 1}
	l.upf.AddPDR(t, 1, 1, good)
	l.upf.AddPDR(t, 1, 2, good)
	free := dumpPDRMarks(t, abi)[2].pdrMark
	l.upf.Remove(t, "pdr", 1, 2)
	time.Sleep(time.Second) // PDR 2's mark is free again after its grace period
	// Now the lowest free mark is PDR 2's: every failed add takes it first.
	for i := 0; i < 20; i++ {
		if err := gtp5gnl.CreatePDROID(l.upf.Client(), l.upf.Link, gtp5gtest.OID(1, 1), good.Attrs()); err == nil {
			t.Fatal("adding PDR 1 a second time succeeded")
		}
	}
	bad := good
	bad.FARID = 99 // no such FAR: refused once the PDR is filled in
	for i := 0; i < 50; i++ {
		if err := gtp5gnl.CreatePDROID(l.upf.Client(), l.upf.Link, gtp5gtest.OID(1, 3), bad.Attrs()); err == nil {
			t.Fatal("a PDR whose FAR does not exist was added")
		}
	}
	l.upf.AddPDR(t, 1, 4, good)
	recs := dumpPDRMarks(t, abi)
	if _, ok := recs[3]; ok {
		t.Errorf("the refused PDR 3 is in the GET_PDR dump")
	}
	if got := recs[4].pdrMark; got != free {
		t.Errorf("PDR 4 added right after 70 failed adds has mark %#x, want %#x (the lowest free one): failed adds hold marks", got, free)
	}
}

// TestGtp5gSeriesQFIAfterFirstQERDelete: a PDR listing [AMBR QER, flow
// QER], as free5GC lists a non-GBR flow's, takes its QFI from the flow
// QER once the AMBR QER is deleted (the series stopped marking it).
func TestGtp5gSeriesQFIAfterFirstQERDelete(t *testing.T) {
	requireSeriesFixes(t)
	setMarkModeProc(t, "qfi")
	l := newGtp5gLab(t)
	l.programRAN(t)
	l.upf.AddQER(t, 1, 1, gtp5gtest.QER{QFI: 9, MBRKbps: 40000}) // session AMBR
	l.upf.AddQER(t, 1, 2, flowA)                                 // QFI 2
	l.upf.AddFAR(t, 1, 1, gtp5gtest.FARForward(100, "10.100.0.2"))
	l.upf.AddPDR(t, 1, 1, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.2", FARID: 1, QERIDs: []uint32{1, 2}})
	observe := []uint32{9, 2}
	if got := marksOnN3(t, "QERs [9, 2]", observe, markFieldMask, l.sA, l.ueA, pktsA); got[9] != pktsA {
		t.Fatalf("with both QERs flow A left N3 with marks %v; want all %d with the first QER's QFI 9", got, pktsA)
	}
	l.upf.Remove(t, "qer", 1, 1)
	if got := marksOnN3(t, "QER 9 deleted", observe, markFieldMask, l.sA, l.ueA, pktsA); len(got) != 1 || got[2] != pktsA {
		t.Errorf("after the first QER was deleted flow A left N3 with marks %v; want all %d with the remaining QER's QFI 2", got, pktsA)
	}
}

// TestGtp5gSeriesProcRuleReads: /proc/gtp5g's pdr, far, qer and urr show
// the rule root selected last, in any namespace; only root reads them.
// The module-wide switches stay readable by everyone.
func TestGtp5gSeriesProcRuleReads(t *testing.T) {
	requireSeriesFixes(t)
	read := func(f string) func() error {
		return func() error { _, err := os.ReadFile("/proc/gtp5g/" + f); return err }
	}
	for _, f := range []string{"pdr", "far", "qer", "urr"} {
		st, err := os.Stat("/proc/gtp5g/" + f)
		if err != nil {
			t.Fatalf("/proc/gtp5g/%s: %v", f, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("/proc/gtp5g/%s is %v, want -rw-------", f, st.Mode().Perm())
		}
		if err := asThread(nobody, read(f)); !errors.Is(err, unix.EACCES) {
			t.Errorf("uid 65534 reading /proc/gtp5g/%s: %v, want EACCES", f, err)
		}
	}
	for _, f := range []string{"dbg", "qos", "seq", "qos_mark"} {
		if err := asThread(nobody, read(f)); err != nil {
			t.Errorf("uid 65534 reading /proc/gtp5g/%s: %v, want it readable", f, err)
		}
	}
}
