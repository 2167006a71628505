package edt

import (
	"testing"
	"time"
)

// The idle credit (LoadOptions.Burst) makes each MBR and AMBR clock a
// token bucket: a flow or session that has not sent for a while (a new
// one: for ever) may send its burst at once, no more, however long it was
// idle; a greedy one is then paced exactly at its rate.
func TestIdleCreditIsOneBurst(t *testing.T) {
	const burst, rate, size = 4000, 10_000, 1000 // 800 ms a packet: the clock stays ahead across stalls
	opts := testOptions()
	opts.Burst = burst
	p := loadForTest(t, opts)
	if err := p.AddSession(1, rate); err != nil {
		t.Fatal(err)
	}
	for id, s := range map[uint32]FlowSpec{
		1: {Marks: []uint32{1}, MBR: rate, DelayBudget: time.Hour, Class: classNonGBR},
		// Two flows under session 1's AMBR, each far below its own MBR.
		2: {Marks: []uint32{2}, Session: 1, MBR: 1e9, DelayBudget: time.Hour, Class: classNonGBR},
		3: {Marks: []uint32{3}, Session: 1, MBR: 1e9, DelayBudget: time.Hour, Class: classNonGBR},
	} {
		if err := p.AddFlow(id, s); err != nil {
			t.Fatal(err)
		}
	}
	d, tau := txNs(size, rate), txNs(burst, rate)
	for _, marks := range [][]uint32{{1}, {2, 3}} {
		// GCRA: the first packet and the burst behind it leave now
		// (1 + burst/size packets), the next where the clock stands.
		free := 1 + burst/size
		var first, prev uint64
		for i := 0; i < free+3; i++ {
			mark := marks[i%len(marks)]
			before := monoNow(t)
			_, out := run(t, p, mark, frame(size))
			ts, after := out.tstamp(), monoNow(t)
			switch {
			case i == 0:
				first = ts
			case i < free:
				if ts < before || ts > after {
					t.Fatalf("marks %v: packet %d departs %+d ns from now, want now: within the burst of %d bytes", marks, i, int64(ts)-int64(before), burst)
				}
			case i == free:
				if want := first + uint64(free)*d - tau; ts != want {
					t.Fatalf("marks %v: packet %d (the first past the burst) departs at first %+d ns, want %+d", marks, i, int64(ts-first), int64(want-first))
				}
			default:
				if ts != prev+d {
					t.Fatalf("marks %v: packet %d departs %+d ns after the one before, want %d: a greedy sender gets no credit", marks, i, int64(ts-prev), d)
				}
			}
			prev = ts
		}
	}
}

// Without credit (Burst 0) the second packet of a new flow already waits
// its first's time: pure pacing, as TestMBRPacing relies on.
func TestNoCreditWithoutBurst(t *testing.T) {
	p := loadForTest(t, testOptions())
	const rate = 10_000
	if err := p.AddFlow(1, FlowSpec{Marks: []uint32{1}, MBR: rate, DelayBudget: time.Hour, Class: classNonGBR}); err != nil {
		t.Fatal(err)
	}
	_, a := run(t, p, 1, frame(1000))
	_, b := run(t, p, 1, frame(1000))
	if b.tstamp() != a.tstamp()+txNs(1000, rate) {
		t.Errorf("second packet %+d ns after the first, want %d", int64(b.tstamp()-a.tstamp()), txNs(1000, rate))
	}
}

// creditScene is a session (AMBR 1 Mbit/s: 8 ms a 1000-byte packet) with
// flow 1 (MBR 100 kbit/s: 80 ms a packet; 1 s budget) and flow 2 (no MBR,
// an hour's budget) under it, an 8000-byte burst (8 packets), and the
// session's clock filled by lead of flow 2's packets: ahead of now by
// about lead × 8 ms less the burst's 64 ms.
func creditScene(t *testing.T, lead int) *Pacer {
	t.Helper()
	opts := testOptions()
	opts.Burst = 8000
	p := loadForTest(t, opts)
	if err := p.AddSession(1, 1e6); err != nil {
		t.Fatal(err)
	}
	for id, s := range map[uint32]FlowSpec{
		1: {Marks: []uint32{1}, Session: 1, MBR: 100_000, DelayBudget: time.Second, Class: classNonGBR},
		2: {Marks: []uint32{2}, Session: 1, DelayBudget: time.Hour, Class: classNonGBR},
	} {
		if err := p.AddFlow(id, s); err != nil {
			t.Fatal(err)
		}
	}
	for range lead {
		if verdict, _ := run(t, p, 2, frame(1000)); verdict == actShot {
			t.Fatal("flow 2 dropped while filling the session's clock")
		}
	}
	return p
}

// departures sends n packets of flow 1 and returns their departure
// times; each must pass.
func departures(t *testing.T, p *Pacer, n int) []uint64 {
	t.Helper()
	var ts []uint64
	for i := range n {
		verdict, out := run(t, p, 1, frame(1000))
		if verdict == actShot {
			t.Fatalf("flow 1's packet %d dropped, want it within its 1 s budget", i)
		}
		ts = append(ts, out.tstamp())
	}
	return ts
}

// creditThenMBR checks flow 1's departures: the first free of them at
// the session's pace (its clock's 8 ms apart), the rest at the flow's MBR
// as GCRA counts it, from the first's departure.
func creditThenMBR(t *testing.T, ts []uint64, free int, why string) {
	t.Helper()
	d, pace := txNs(1000, 100_000), txNs(1000, 1e6)
	for i := 1; i < len(ts); i++ {
		want := ts[0] + uint64(i)*pace
		if i >= free {
			want = ts[0] + uint64(i-free+1)*d
		}
		if ts[i] != want {
			t.Errorf("flow 1's packet %d leaves at the first's %+d ns, want %+d: %s", i, int64(ts[i]-ts[0]), int64(want-ts[0]), why)
		}
	}
}

// A flow whose packet its session's AMBR refused (the session's clock
// lay beyond the flow's budget) was not idle: when the session lets it
// through later it has 4 packets of credit (REFUSED_CREDIT), not its
// 8-packet burst of idle credit, so it leaves 1 + 4 packets at the
// session's pace and then keeps to its MBR. With the idle credit it would
// leave above its MBR after every stretch its session held it back.
func TestRefusedFlowKeepsLittleCredit(t *testing.T) {
	p := creditScene(t, 160) // the session's clock about 1.22 s ahead: beyond the budget for 0.2 s
	if verdict, _ := run(t, p, 1, frame(1000)); verdict != actShot {
		t.Fatalf("flow 1's packet passed with the session's clock beyond its budget; want TC_ACT_SHOT")
	}
	clock, err := p.SessionClock(1)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the session's clock lies 0.7 s ahead: within the budget
	// for the packets below.
	time.Sleep(time.Duration(int64(clock-monoNow(t)) - int64(700*time.Millisecond)))
	creditThenMBR(t, departures(t, p, 7), 5, "4 packets of credit after a refusal, then its MBR")
}

// A flow's MBR credit is counted from its packets' departures: a flow
// idle until now whose session's clock lies ahead sends its burst (8
// packets after the first) at the session's pace and then keeps to its
// MBR, however far ahead the session's clock lies. Counted from now, the
// session's lead would be credit too.
func TestMBRCreditCountsFromDeparture(t *testing.T) {
	p := creditScene(t, 80) // the session's clock about 0.58 s ahead
	creditThenMBR(t, departures(t, p, 11), 9, "its burst, then its MBR")
}

// A refused flow's MBR clock stays within the flow's own budget, however
// far ahead its session's clock lay (another flow of the session may have
// a longer budget): when a new AMBR starts the session's clock again, the
// flow's next packet passes at once rather than wait out the old clock.
func TestRefusedFlowFollowsANewAMBR(t *testing.T) {
	p := loadForTest(t, testOptions())
	const ambr = 100_000 // 80 ms a 1000-byte packet
	if err := p.AddSession(1, ambr); err != nil {
		t.Fatal(err)
	}
	for id, s := range map[uint32]FlowSpec{
		1: {Marks: []uint32{1}, Session: 1, MBR: 1e6, DelayBudget: 100 * time.Millisecond, Class: classNonGBR},
		2: {Marks: []uint32{2}, Session: 1, DelayBudget: time.Hour, Class: classNonGBR},
	} {
		if err := p.AddFlow(id, s); err != nil {
			t.Fatal(err)
		}
	}
	for range 125 { // the session's clock 10 s ahead
		run(t, p, 2, frame(1000))
	}
	if verdict, _ := run(t, p, 1, frame(1000)); verdict != actShot {
		t.Fatal("flow 1's packet passed with the session's clock 10 s ahead of its 100 ms budget")
	}
	if err := p.SetSessionAMBR(1, ambr); err != nil {
		t.Fatal(err)
	}
	before := monoNow(t)
	verdict, out := run(t, p, 1, frame(1000))
	if verdict == actShot {
		t.Fatal("flow 1's packet dropped after its session's new AMBR: its MBR clock kept the old session clock")
	}
	if ahead := int64(out.tstamp()) - int64(before); ahead > int64(100*time.Millisecond) {
		t.Errorf("flow 1's packet leaves %v ahead, beyond its 100 ms budget", time.Duration(ahead))
	}
}

// The GBR meter has the MBR clock's idle credit: a GBR flow that has not
// sent for a while has one burst (LoadOptions.Burst) counted as
// guaranteed, besides what its ahead tolerance (GBRBurst) allows, however
// long it was idle; the packet after them is excess. A burst the MBR clock
// lets leave at once is then guaranteed too, as an HTB class's burst is.
func TestGBRMeterIdleCreditIsOneBurst(t *testing.T) {
	const burst, size = 4000, 1000
	const gbr, mbr = 100_000, 1_000_000_000 // 80 ms a packet at the GBR, next to nothing at the MBR
	for _, credit := range []uint32{0, burst} {
		opts := testOptions()
		opts.Burst = credit
		p := loadForTest(t, opts)
		if err := p.AddFlow(1, FlowSpec{Marks: []uint32{1}, GBR: gbr, MBR: mbr, GBRBurst: 1, DelayBudget: time.Hour, Class: classNonGBR, GBRClass: classGBR}); err != nil {
			t.Fatal(err)
		}
		// With the ahead tolerance of one byte, no credit guarantees the
		// first packet alone; the credit adds burst/size packets.
		free := 1 + int(credit)/size
		for i := 0; i <= free; i++ {
			_, out := run(t, p, 1, frame(size))
			want := uint32(classGBR)
			if i == free {
				want = classNonGBR
			}
			if got := out.priority(); got != want {
				t.Fatalf("credit %d bytes: packet %d in class %#x, want %#x (%d packets guaranteed, then excess)", credit, i, got, want, free)
			}
		}
		p.Close()
	}
}
