package lab

import (
	"encoding/binary"
	"testing"
	"time"
)

// A kernel receive time moved onto the monotonic clock carries a monotonic
// reading and keeps its wall-clock distance from now, so comparing it with
// a run's start (time.Now() before the run) uses the monotonic clock, which
// a step of the wall clock during the run does not move.
func TestOnMonotonic(t *testing.T) {
	wall := time.Now().Round(0).Add(-3 * time.Millisecond) // a receive time: wall clock only
	at := onMonotonic(wall)
	if at == at.Round(0) {
		t.Fatalf("onMonotonic(%v) carries no monotonic reading", wall)
	}
	if d := time.Since(at); d < 3*time.Millisecond || d > time.Second {
		t.Errorf("moved time is %v before now; want about 3 ms", d)
	}
}

// A packet's time comes from the gNB's stamp when it belongs to the run,
// else from the local kernel stamp, else from now: a stamp from a stepped
// or bogus clock never moves a packet out of the run.
func TestReceivedAtSkipsImplausibleStamps(t *testing.T) {
	start := time.Now().Add(-2 * time.Second)
	payload := make([]byte, 16)
	stamp := func(at time.Time) {
		binary.BigEndian.PutUint64(payload[8:], uint64(at.UnixNano()))
	}
	sec := func(at time.Time) int { return int(at.Sub(start) / time.Second) }

	stamp(time.Now().Add(-1500 * time.Millisecond)) // half a second into the run
	if s := sec(receivedAt(payload, time.Time{}, start, 10)); s != 0 {
		t.Errorf("a plausible gNB stamp lands in second %d; want 0", s)
	}
	for _, bogus := range []time.Time{time.Unix(3, 0), time.Now().Add(-time.Hour), time.Now().Add(time.Hour)} {
		stamp(bogus)
		if s := sec(receivedAt(payload, time.Time{}, start, 10)); s != 2 {
			t.Errorf("gNB stamp %v: packet in second %d; want 2 (now)", bogus, s)
		}
	}
}
