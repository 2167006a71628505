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
