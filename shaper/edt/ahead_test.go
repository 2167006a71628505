package edt

import (
	"testing"
	"time"
)

// A flow above its MBR has no more packets scheduled ahead for the
// non-GBR class's leaf than fq keeps for one flow (LoadOptions.FlowAhead,
// DefaultFlowAhead under fq's default flow_limit of 100), however long its budget: the program drops
// the rest, uncharged, instead of fq dropping them after the clock was
// charged. Packets a GBR flow sends within its GBR go to the guaranteed
// class, whose leaf holds the whole horizon: the budget alone bounds them.
func TestPacketsAheadWithinTheLeaf(t *testing.T) {
	opts := testOptions()
	opts.FlowAhead = DefaultFlowAhead
	p := loadForTest(t, opts)
	const flowAhead = DefaultFlowAhead
	const rate, n = 10_000, flowAhead + 30 // 800 ms a packet: ahead of now across stalls
	for id, s := range map[uint32]FlowSpec{
		1: {Marks: []uint32{1}, MBR: rate, DelayBudget: time.Hour, Class: classNonGBR},
		2: {Marks: []uint32{2}, GBR: rate, MBR: rate, GBRBurst: 1, DelayBudget: time.Hour, Class: classNonGBR, GBRClass: classGBR},
	} {
		if err := p.AddFlow(id, s); err != nil {
			t.Fatal(err)
		}
	}
	for mark, wantPassed := range map[uint32]uint64{1: flowAhead + 1, 2: n} {
		var first uint64
		for i := range n {
			verdict, out := run(t, p, mark, frame(1000))
			if i == 0 {
				first = out.tstamp()
			}
			if pass := uint64(i) < wantPassed; pass != (verdict == actOK) {
				t.Fatalf("flow %d: packet %d verdict %d, want pass %v", mark, i, verdict, pass)
			}
		}
		st, err := p.Flow(mark)
		if err != nil {
			t.Fatal(err)
		}
		if st.Packets != wantPassed || st.Drops != n-wantPassed {
			t.Errorf("flow %d: %d passed, %d dropped; want %d and %d", mark, st.Packets, st.Drops, wantPassed, n-wantPassed)
		}
		if want := first + wantPassed*txNs(1000, rate); st.MBRClock != want {
			t.Errorf("flow %d: MBR clock %d, want %d: the dropped packets were charged", mark, st.MBRClock, want)
		}
	}
}

// The bound counts packets of the flow's mean size, not the packet's own:
// a small packet behind a backlog of large ones (TCP's pure segments and
// GSO bursts) passes while fewer than FlowAhead packets lie ahead of it.
func TestPacketsAheadCountsTheFlowsMeanSize(t *testing.T) {
	opts := testOptions()
	opts.FlowAhead = DefaultFlowAhead
	p := loadForTest(t, opts)
	const rate = 10_000 // 1.12 s for 1400 bytes
	if err := p.AddFlow(1, FlowSpec{Marks: []uint32{1}, MBR: rate, DelayBudget: time.Hour, Class: classNonGBR}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if verdict, _ := run(t, p, 1, frame(1400)); verdict != actOK {
			t.Fatalf("large packet %d: verdict %d, want TC_ACT_OK", i, verdict)
		}
	}
	// 20 packets ahead, 22 s: 96 of its own 64-byte times would be 4.9 s.
	if verdict, _ := run(t, p, 1, frame(64)); verdict != actOK {
		t.Errorf("a 64-byte packet behind 20 large ones: verdict %d, want TC_ACT_OK", verdict)
	}
}
