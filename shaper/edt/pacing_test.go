package edt

import (
	"testing"
	"time"
)

const (
	classGBR     = 0x67710010 // guaranteed shared class
	classNonGBR  = 0x67710011 // non-GBR shared class
	classDefault = 0x67710002
)

// Back-to-back packets of one flow leave exactly user-bytes*8/MBR apart,
// counting the user's IP packet (not the 58 bytes around it); the first
// leaves now, on CLOCK_MONOTONIC; each gets the flow's class and hash.
func TestMBRPacing(t *testing.T) {
	p := loadForTest(t, testOptions())
	// 100 kbit/s: 80 ms for 1000 bytes, so the clock stays ahead of now
	// even when the test thread stalls between runs on a loaded host.
	const mbr = 100_000
	if err := p.AddFlow(7, FlowSpec{Marks: []uint32{0x107}, MBR: mbr, DelayBudget: time.Hour, Class: classNonGBR}); err != nil {
		t.Fatal(err)
	}
	sizes := []int{1000, 500, 1500, 40, 1000, 1228}
	var prev uint64
	var total int
	before := monoNow(t)
	for i, n := range sizes {
		// A tstamp the packet brings is overwritten, not a lower bound.
		in := newCtx(0x107, 0)
		in.setTstamp(1 << 62)
		verdict, out := runCtx(t, p, in, frame(n))
		if verdict != actOK {
			t.Fatalf("packet %d: verdict %d, want TC_ACT_OK", i, verdict)
		}
		if out.priority() != classNonGBR || out.cb(0) != flowHash(7) || out.cb(1) != 7 {
			t.Fatalf("packet %d: priority %#x hash %#x flow %d, want %#x %#x 7", i, out.priority(), out.cb(0), out.cb(1), classNonGBR, flowHash(7))
		}
		ts := out.tstamp()
		if i == 0 {
			if after := monoNow(t); ts < before || ts > after {
				t.Fatalf("first departure %d outside the run's CLOCK_MONOTONIC window %d..%d", ts, before, after)
			}
		} else if want := prev + txNs(sizes[i-1], mbr); ts != want {
			t.Fatalf("packet %d departs at +%d ns after packet %d, want +%d (%d user bytes at %d bit/s)", i, ts-prev, i-1, want-prev, sizes[i-1], mbr)
		}
		prev = ts
		total += n
	}
	st, err := p.Flow(7)
	if err != nil {
		t.Fatal(err)
	}
	if st.Packets != uint64(len(sizes)) || st.Bytes != uint64(total) || st.Drops != 0 {
		t.Errorf("flow counters %+v, want %d packets, %d user bytes, no drops", st, len(sizes), total)
	}
	if want := prev + txNs(sizes[len(sizes)-1], mbr); st.MBRClock != want {
		t.Errorf("MBR clock %d, want the last departure + its time %d", st.MBRClock, want)
	}
}

// One session's AMBR paces its non-GBR flows together: alternating packets
// of two flows (each well under its own MBR) leave one AMBR slot apart. A
// flow of another session and a GBR flow of the same session (outside the
// AMBR) are not held by that clock.
func TestAMBRAcrossFlows(t *testing.T) {
	p := loadForTest(t, testOptions())
	const ambr = 100_000 // 80 ms a packet: ahead of now across stalls
	for _, s := range []struct {
		id   uint32
		ambr uint64
	}{{1, ambr}, {2, ambr}} {
		if err := p.AddSession(s.id, s.ambr); err != nil {
			t.Fatal(err)
		}
	}
	flows := map[uint32]FlowSpec{
		10: {Marks: []uint32{10}, Session: 1, MBR: 100_000_000, DelayBudget: time.Hour, Class: classNonGBR},
		11: {Marks: []uint32{11}, Session: 1, DelayBudget: time.Hour, Class: classNonGBR},
		20: {Marks: []uint32{20}, Session: 2, DelayBudget: time.Hour, Class: classNonGBR},
		12: {Marks: []uint32{12}, Session: 1, GBR: 50_000_000, MBR: 100_000_000, DelayBudget: time.Hour, Class: classNonGBR, GBRClass: classGBR},
	}
	for id, s := range flows {
		if err := p.AddFlow(id, s); err != nil {
			t.Fatal(err)
		}
	}
	var prev uint64
	for i := 0; i < 8; i++ {
		mark := uint32(10 + i%2)
		_, out := run(t, p, mark, frame(1000))
		ts := out.tstamp()
		if i > 0 && ts != prev+txNs(1000, ambr) {
			t.Fatalf("packet %d (flow %d): +%d ns after the previous packet of the session, want +%d", i, mark, ts-prev, txNs(1000, ambr))
		}
		prev = ts
	}
	clock, err := p.SessionClock(1)
	if err != nil {
		t.Fatal(err)
	}
	if clock != prev+txNs(1000, ambr) {
		t.Errorf("session 1 clock %d, want %d", clock, prev+txNs(1000, ambr))
	}
	// Session 1's clock is now ~560 ms ahead; the others must leave now.
	for _, mark := range []uint32{20, 12} {
		before := monoNow(t)
		_, out := run(t, p, mark, frame(1000))
		if ts, after := out.tstamp(), monoNow(t); ts < before || ts > after {
			t.Errorf("flow %d departs %d ns after now: held by session 1's AMBR clock", mark, int64(ts)-int64(before))
		}
	}
}

// A GBR flow's packets within its GBR go to the guaranteed class, the rest
// (up to MBR) to the non-GBR class, all on the one MBR clock: at GBR = MBR/2
// with a burst of one byte, classes alternate while departures keep the
// MBR spacing. The guaranteed packets carry the guaranteed class's hash
// (the class is one fq flow), the excess the flow's own.
func TestGBRSplit(t *testing.T) {
	p := loadForTest(t, testOptions())
	const gbr, mbr = 100_000, 200_000 // 40 ms a packet at MBR
	if err := p.AddFlow(3, FlowSpec{Marks: []uint32{3}, GBR: gbr, MBR: mbr, GBRBurst: 1, DelayBudget: time.Hour, Class: classNonGBR, GBRClass: classGBR}); err != nil {
		t.Fatal(err)
	}
	var prev uint64
	const n = 10
	for i := 0; i < n; i++ {
		_, out := run(t, p, 3, frame(1000))
		want := uint32(classGBR)
		if i%2 == 1 {
			want = classNonGBR
		}
		if out.priority() != want {
			t.Fatalf("packet %d: class %#x, want %#x", i, out.priority(), want)
		}
		if h := map[uint32]uint32{classGBR: classGBR, classNonGBR: flowHash(3)}[want]; out.cb(0) != h {
			t.Fatalf("packet %d in class %#x: hash %#x, want %#x", i, want, out.cb(0), h)
		}
		if ts := out.tstamp(); i > 0 && ts != prev+txNs(1000, mbr) {
			t.Fatalf("packet %d: +%d ns, want the MBR spacing +%d", i, ts-prev, txNs(1000, mbr))
		}
		prev = out.tstamp()
	}
	st, err := p.Flow(3)
	if err != nil {
		t.Fatal(err)
	}
	if st.Packets != n || st.GBRPackets != n/2 || st.GBRBytes != n/2*1000 {
		t.Errorf("flow counters %+v, want %d packets, %d of them guaranteed", st, n, n/2)
	}
}

// A packet whose departure lies beyond now + the delay budget is dropped
// and counted, and leaves the clocks where they were; for a flow's MBR and
// for a session's AMBR.
func TestHorizonDrop(t *testing.T) {
	p := loadForTest(t, testOptions())
	// 1000 user bytes at 80 kbit/s take 100 ms: the second packet would
	// leave 100 ms after the first, past the 20 ms budget (the test would
	// have to stall 80 ms between two runs to miss it).
	const rate = 80_000
	if err := p.AddSession(5, rate); err != nil {
		t.Fatal(err)
	}
	for id, s := range map[uint32]FlowSpec{
		1: {Marks: []uint32{1}, MBR: rate, DelayBudget: 20 * time.Millisecond, Class: classNonGBR},
		2: {Marks: []uint32{2}, Session: 5, DelayBudget: 20 * time.Millisecond, Class: classNonGBR},
	} {
		if err := p.AddFlow(id, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, mark := range []uint32{1, 2} {
		verdict, out := run(t, p, mark, frame(1000))
		if verdict != actOK {
			t.Fatalf("flow %d: first packet verdict %d, want TC_ACT_OK", mark, verdict)
		}
		first := out.tstamp()
		for i := 0; i < 4; i++ {
			if verdict, _ := run(t, p, mark, frame(1000)); verdict != actShot {
				t.Fatalf("flow %d: packet %d verdict %d, want TC_ACT_SHOT", mark, i+1, verdict)
			}
		}
		st, err := p.Flow(mark)
		if err != nil {
			t.Fatal(err)
		}
		if st.Packets != 1 || st.Drops != 4 || st.DropBytes != 4000 {
			t.Errorf("flow %d counters %+v, want 1 packet, 4 drops of 1000 bytes", mark, st)
		}
		clock := st.MBRClock
		if mark == 2 {
			if clock, err = p.SessionClock(5); err != nil {
				t.Fatal(err)
			}
		}
		if clock != first+txNs(1000, rate) {
			t.Errorf("flow %d: clock %d moved by drops, want %d", mark, clock, first+txNs(1000, rate))
		}
	}
}

// Packets no flow claims (mark 0, an unknown mark, a mark whose flow is
// gone) get the default class and keep their tstamp; they are counted. The
// mark's bits 24-31 are not part of the flow mark.
func TestUnknownMark(t *testing.T) {
	p := loadForTest(t, testOptions())
	if err := p.AddFlow(9, FlowSpec{Marks: []uint32{9, 0x99}, MBR: 1e9, DelayBudget: time.Second, Class: classNonGBR}); err != nil {
		t.Fatal(err)
	}
	check := func(mark, wantPrio uint32) {
		t.Helper()
		in := newCtx(mark, 0x1234)
		in.setTstamp(4242)
		verdict, out := runCtx(t, p, in, frame(100))
		if verdict != actOK || out.priority() != wantPrio || out.tstamp() != 4242 {
			t.Errorf("mark %#x: verdict %d priority %#x tstamp %d, want TC_ACT_OK %#x 4242", mark, verdict, out.priority(), out.tstamp(), wantPrio)
		}
	}
	check(0x55, 0x1234) // no default class yet: priority left alone
	if err := p.SetDefaultClass(classDefault); err != nil {
		t.Fatal(err)
	}
	check(0, classDefault)
	check(0x55, classDefault)
	if err := p.objs.Flows.Delete(uint32(9)); err != nil { // a stale mark
		t.Fatal(err)
	}
	check(0x99, classDefault)
	st, err := p.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.UnknownPackets != 4 || st.StalePackets != 1 || st.UnknownBytes != 4*uint64(len(frame(100))) {
		t.Errorf("stats %+v, want 4 unknown packets (1 stale) of %d bytes", st, len(frame(100)))
	}

	if err := p.AddFlow(8, FlowSpec{Marks: []uint32{8}, MBR: 1e9, DelayBudget: time.Second, Class: classNonGBR}); err != nil {
		t.Fatal(err)
	}
	if _, out := run(t, p, 0x8000_0008, frame(100)); out.priority() != classNonGBR {
		t.Errorf("mark 0x80000008: class %#x, want flow 8's %#x (bit 31 is gtp5g's framed-route flag)", out.priority(), classNonGBR)
	}
}

// A flow held back by its own MBR does not hold its session's other flows
// back: the session's AMBR clock is charged when each packet is paced, not
// at the later time the flow's MBR lets it leave, so while the session is
// under its AMBR another flow's packet leaves at the session's clock, not
// behind the held flow's departures.
func TestAMBRNotHeldByAFlowsMBR(t *testing.T) {
	p := loadForTest(t, testOptions())
	const ambr, mbr = 100_000, 10_000 // 80 ms and 800 ms for 1000 bytes: ahead of now across stalls
	if err := p.AddSession(1, ambr); err != nil {
		t.Fatal(err)
	}
	for id, s := range map[uint32]FlowSpec{
		1: {Marks: []uint32{1}, Session: 1, MBR: mbr, DelayBudget: time.Hour, Class: classNonGBR},
		2: {Marks: []uint32{2}, Session: 1, DelayBudget: time.Hour, Class: classNonGBR},
	} {
		if err := p.AddFlow(id, s); err != nil {
			t.Fatal(err)
		}
	}
	const n = 5
	var first, last uint64
	for i := range n {
		_, out := run(t, p, 1, frame(1000))
		if i == 0 {
			first = out.tstamp()
		}
		last = out.tstamp()
	}
	if want := first + (n-1)*txNs(1000, mbr); last != want {
		t.Fatalf("flow 1's last packet leaves at first %+d ns, want %+d: its MBR spacing", int64(last-first), int64(want-first))
	}
	clock, err := p.SessionClock(1)
	if err != nil {
		t.Fatal(err)
	}
	if want := first + n*txNs(1000, ambr); clock != want {
		t.Errorf("session clock at first %+d ns, want %+d: n packets' AMBR time", int64(clock-first), int64(want-first))
	}
	_, out := run(t, p, 2, frame(1000))
	if ts := out.tstamp(); ts != clock {
		t.Errorf("flow 2 leaves at first %+d ns, want the session clock %+d (flow 1's last leaves at %+d)", int64(ts-first), int64(clock-first), int64(last-first))
	}
}
