package qosview

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
	"github.com/free5gc/gtpqos/shaper"
)

// seedFlows are the seed's contracts: A 15/18, B 5/6, C -/30 Mbit/s with
// QFI 2/3/4, downlink; C (non-GBR) sits under the session AMBR (100 Mbit/s)
// with the default flow (default QER 2, QFI 1, no rate of its own), which
// also has an uplink flow under the uplink AMBR (200 Mbit/s).
func seedFlows(markD, markA, markB, markC uint32) []shaper.Flow {
	return []shaper.Flow{
		{ID: shaper.FlowID{SEID: seedSEID, QERID: 2}, QFI: 1, Direction: shaper.Downlink, SessionAMBR: 100 * mbit, TEID: 100, Mark: markD},
		{ID: shaper.FlowID{SEID: seedSEID, QERID: 3}, QFI: 2, Direction: shaper.Downlink, GBR: 15 * mbit, MBR: 18 * mbit, TEID: 100, Mark: markA},
		{ID: shaper.FlowID{SEID: seedSEID, QERID: 4}, QFI: 3, Direction: shaper.Downlink, GBR: 5 * mbit, MBR: 6 * mbit, TEID: 100, Mark: markB},
		{ID: shaper.FlowID{SEID: seedSEID, QERID: 5}, QFI: 4, Direction: shaper.Downlink, GBR: 0, MBR: 30 * mbit, SessionAMBR: 100 * mbit, TEID: 100, Mark: markC},
		{ID: shaper.FlowID{SEID: seedSEID, QERID: 2}, QFI: 1, Direction: shaper.Uplink, SessionAMBR: 200 * mbit, TEID: 200, Mark: markD},
	}
}

// Flow C's PDRs list the AMBR QER (QFI 1) first, so gtp5g stamps QFI 1 on
// C's packets: a true finding about free5GC's rule shape, reported.
var seedWireQFI = Problem{Kind: WireQFI, SEID: seedSEID, PDR: 8, QER: 5,
	Detail: "gtp5g writes QFI 1 into this PDR's packets (first QER with a QFI in [1 5]), not the flow's QFI 4"}

func TestSeedStock(t *testing.T) {
	qers, pdrs, fars := seedSession().build()
	flows, problems := Build(qers, pdrs, fars, Options{MarkMode: gtp5g.MarkOff})
	if diff := cmp.Diff(seedFlows(0, 0, 0, 0), flows); diff != "" {
		t.Errorf("flows differ (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Problem{seedWireQFI}, problems); diff != "" {
		t.Errorf("problems differ (-want +got):\n%s", diff)
	}
}

func TestSeedRoles(t *testing.T) {
	qers, pdrs, _ := seedSession().build()
	want := map[Key]Role{
		{seedSEID, 1}: RoleSessionAMBR,
		{seedSEID, 2}: RoleNoRate,
		{seedSEID, 3}: RoleFlow,
		{seedSEID, 4}: RoleFlow,
		{seedSEID, 5}: RoleFlow,
	}
	if diff := cmp.Diff(want, Roles(qers, pdrs)); diff != "" {
		t.Errorf("roles differ (-want +got):\n%s", diff)
	}
}

func TestSeedPatchedMarks(t *testing.T) {
	s := seedSession()
	s.patched, s.markBase = true, 0x100
	qers, pdrs, fars := s.build()

	flows, problems := Build(qers, pdrs, fars, Options{MarkMode: gtp5g.MarkFlow})
	// Flow C's packets carry the AMBR QER's mark (it gives them their QFI).
	if diff := cmp.Diff(seedFlows(0x102, 0x103, 0x104, 0x101), flows); diff != "" {
		t.Errorf("flow mode: flows differ (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Problem{seedWireQFI}, problems); diff != "" {
		t.Errorf("flow mode: problems differ (-want +got):\n%s", diff)
	}

	flows, problems = Build(qers, pdrs, fars, Options{MarkMode: gtp5g.MarkQFI})
	if diff := cmp.Diff(seedFlows(1, 2, 3, 1), flows); diff != "" {
		t.Errorf("qfi mode: flows differ (-want +got):\n%s", diff)
	}
	// C goes out with QFI 1, the default flow's: qfi mode cannot part them.
	if n := NotAlone(problems); n != 1 {
		t.Errorf("qfi mode: %d flows not enforced alone, want 1 (C with the default flow): %v", n, problems)
	}
}

// The patched dump of the same session maps exactly like the stock one
// (source interface reported instead of inferred).
func TestSeedPatchedSameAsStock(t *testing.T) {
	s := seedSession()
	s.patched = true
	qers, pdrs, fars := s.build()
	flows, _ := Build(qers, pdrs, fars, Options{MarkMode: gtp5g.MarkOff})
	if diff := cmp.Diff(seedFlows(0, 0, 0, 0), flows); diff != "" {
		t.Errorf("flows differ (-want +got):\n%s", diff)
	}
}

// Two UEs both on QFI 2: flow mode gives different marks.
func TestTwoSessionsFlowMarks(t *testing.T) {
	s1 := seedSession()
	s1.patched, s1.markBase = true, 0x100
	s2 := session{seid: 2, ue: "10.60.0.2", ulTEID: 201, dlTEID: 101, defQFI: 1, patched: true, markBase: 0x200}
	q1, p1, f1 := s1.build()
	q2, p2, f2 := s2.build()
	flows, _ := Build(append(q1, q2...), append(p1, p2...), append(f1, f2...), Options{MarkMode: gtp5g.MarkFlow})
	if len(flows) != 10 {
		t.Fatalf("%d flows, want 10", len(flows))
	}
	type dirMark struct {
		dir  shaper.Direction
		mark uint32
	}
	marks := map[dirMark]shaper.FlowID{}
	for _, f := range flows {
		k := dirMark{f.Direction, f.Mark}
		if other, dup := marks[k]; dup {
			t.Errorf("%s mark %#x shared by %s and %s", f.Direction, f.Mark, other, f.ID)
		}
		marks[k] = f.ID
	}
	var a1, a2 shaper.Flow
	for _, f := range flows {
		if f.ID.QERID == 3 && f.ID.SEID == 1 {
			a1 = f
		}
		if f.ID.QERID == 3 && f.ID.SEID == 2 {
			a2 = f
		}
	}
	if a1.QFI != 2 || a2.QFI != 2 || a1.Mark == a2.Mark || a2.TEID != 101 {
		t.Errorf("flow A of both UEs: %+v / %+v; want QFI 2 each, different marks, UE 2's TEID 101", a1, a2)
	}
}

func TestUplinkFlows(t *testing.T) {
	s := seedSession()
	s.ulRates = true
	qers, pdrs, fars := s.build()
	flows, _ := Build(qers, pdrs, fars, Options{})
	want := append(seedFlows(0, 0, 0, 0),
		shaper.Flow{ID: shaper.FlowID{SEID: seedSEID, QERID: 3}, QFI: 2, Direction: shaper.Uplink, GBR: 15 * mbit, MBR: 18 * mbit, TEID: 200},
		shaper.Flow{ID: shaper.FlowID{SEID: seedSEID, QERID: 4}, QFI: 3, Direction: shaper.Uplink, GBR: 5 * mbit, MBR: 6 * mbit, TEID: 200},
		shaper.Flow{ID: shaper.FlowID{SEID: seedSEID, QERID: 5}, QFI: 4, Direction: shaper.Uplink, MBR: 30 * mbit, SessionAMBR: 200 * mbit, TEID: 200},
	)
	if diff := cmp.Diff(want, flows); diff != "" {
		t.Errorf("flows differ (-want +got):\n%s", diff)
	}
}

func TestProblems(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(q *[]gtp5g.QER, p *[]gtp5g.PDR, f *[]gtp5g.FAR)
		want   []Problem
		flows  int
	}{
		{
			name: "dangling QER",
			mutate: func(q *[]gtp5g.QER, p *[]gtp5g.PDR, f *[]gtp5g.FAR) {
				(*p)[3].QERIDs = []uint32{9} // PDR 4 (flow A DL) -> QER 9
			},
			want:  []Problem{{Kind: DanglingQER, SEID: 1, PDR: 4, QER: 9, Detail: "the PDR references a QER the session does not have"}, seedWireQFI},
			flows: 4,
		},
		{
			name: "dangling FAR",
			mutate: func(q *[]gtp5g.QER, p *[]gtp5g.PDR, f *[]gtp5g.FAR) {
				(*p)[5].FARID = 42 // PDR 6 (flow B DL)
			},
			want:  []Problem{{Kind: DanglingFAR, SEID: 1, PDR: 6, Detail: "the PDR references FAR 42, which the session does not have: TEID unknown"}, seedWireQFI},
			flows: 5,
		},
		{
			name: "non-GBR flow without the default path is ambiguous",
			mutate: func(q *[]gtp5g.QER, p *[]gtp5g.PDR, f *[]gtp5g.FAR) {
				*p = (*p)[2:] // drop the default path's PDRs 1 and 2
			},
			want: []Problem{
				{Kind: AmbiguousQER, SEID: 1, PDR: 7, Detail: "2 rate-bearing QERs [1 5] and none recognised as the session AMBR"},
				{Kind: AmbiguousQER, SEID: 1, PDR: 8, Detail: "2 rate-bearing QERs [1 5] and none recognised as the session AMBR"},
			},
			flows: 2,
		},
		{
			name: "unknown source interface",
			mutate: func(q *[]gtp5g.QER, p *[]gtp5g.PDR, f *[]gtp5g.FAR) {
				cp := gtp5g.InterfaceCPFunction
				(*p)[3].PDI.SourceInterface = &cp
			},
			want:  []Problem{{Kind: UnknownInterface, SEID: 1, PDR: 4, Detail: "source interface cp-function is neither access nor core"}, seedWireQFI},
			flows: 4,
		},
		{
			name: "PDRs of one flow disagree on the TEID",
			mutate: func(q *[]gtp5g.QER, p *[]gtp5g.PDR, f *[]gtp5g.FAR) {
				// A second downlink PDR for flow A, through a FAR with another TEID.
				extra := (*p)[3]
				extra.ID, extra.FARID = 9, 9
				*p = append(*p, extra)
				far := (*f)[3]
				far.ID = 9
				far.Forwarding = &gtp5g.ForwardingParameters{OuterHeaderCreation: &gtp5g.OuterHeaderCreation{TEID: 555}}
				*f = append(*f, far)
			},
			want:  []Problem{seedWireQFI, {Kind: Conflict, SEID: 1, PDR: 9, QER: 3, Detail: "PDRs of one downlink flow disagree: TEID 100 vs 555, mark 0x0 vs 0x0; the first is used"}},
			flows: 5,
		},
		{
			name: "rules listed twice",
			mutate: func(q *[]gtp5g.QER, p *[]gtp5g.PDR, f *[]gtp5g.FAR) {
				*q = append(*q, (*q)[2])
			},
			want:  []Problem{{Kind: DuplicateRule, SEID: 1, QER: 3, Detail: "QER listed twice (same SEID and id, e.g. on two gtp5g devices); the first is used"}, seedWireQFI},
			flows: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, p, f := seedSession().build()
			tt.mutate(&q, &p, &f)
			flows, problems := Build(q, p, f, Options{})
			if diff := cmp.Diff(tt.want, problems); diff != "" {
				t.Errorf("problems differ (-want +got):\n%s", diff)
			}
			if len(flows) != tt.flows {
				t.Errorf("%d flows, want %d: %+v", len(flows), tt.flows, flows)
			}
		})
	}
}

func TestNoMarkReported(t *testing.T) {
	qers, pdrs, fars := seedSession().build() // stock: no flow marks
	_, problems := Build(qers, pdrs, fars, Options{MarkMode: gtp5g.MarkFlow})
	n := 0
	for _, p := range problems {
		if p.Kind == NoMark {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d no-mark problems, want 5 (one per flow): %v", n, problems)
	}
}

func BenchmarkBuild(b *testing.B) {
	// 10k sessions of the seed's shape: 50k flows (the default flow both
	// ways, A, B, C downlink).
	var qers []gtp5g.QER
	var pdrs []gtp5g.PDR
	var fars []gtp5g.FAR
	for i := 0; i < 10000; i++ {
		s := seedSession()
		s.seid = uint64(i + 1)
		q, p, f := s.build()
		qers, pdrs, fars = append(qers, q...), append(pdrs, p...), append(fars, f...)
	}
	b.ResetTimer()
	for b.Loop() {
		flows, _ := Build(qers, pdrs, fars, Options{})
		if len(flows) != 50000 {
			b.Fatalf("%d flows", len(flows))
		}
	}
}
