package lab

import (
	"encoding/binary"
	"testing"
	"time"
)

// The recorder bins a packet's one-way delay by the second it was sent in
// and counts a packet that arrives after one sent later as reordered (and
// only that one: the packets after it are in order again).
func TestDelayRecorder(t *testing.T) {
	start := time.Now().Add(-3 * time.Second)
	r := newDelayRecorder(3)
	at := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	for _, p := range []struct {
		seq      uint64
		sent, rx float64
		reorder  bool
	}{{0, 0.1, 0.102, false}, {2, 1.5, 1.53, false}, {1, 1.4, 1.6, true}, {3, 2.2, 2.2005, false}, {4, 9, 9.1, false}} {
		if got := r.add(p.seq, at(p.sent), at(p.rx)); got != p.reorder {
			t.Errorf("seq %d: reordered %v, want %v", p.seq, got, p.reorder)
		}
	}
	want := [][]float32{{2}, {30, 200}, {0.5}}
	for s := range want {
		if len(r.ms[s]) != len(want[s]) {
			t.Fatalf("second %d: delays %v, want %v", s, r.ms[s], want[s])
		}
		for i, d := range want[s] {
			if g := r.ms[s][i]; g < d-0.01 || g > d+0.01 {
				t.Errorf("second %d packet %d: delay %v ms, want %v", s, i, g, d)
			}
		}
	}
	// A packet stamped by the sender carries its send time since the
	// run's start, which a kernel receive time moved onto the monotonic
	// clock follows.
	buf := make([]byte, udpHeaderLen)
	stampSend(buf, start)
	if d := onMonotonic(time.Now()).Sub(start) - sentAt(buf); d < 0 || d > time.Second {
		t.Errorf("stamp to now: %v", d)
	}
	if binary.BigEndian.Uint64(buf[:8]) != 0 || binary.BigEndian.Uint32(buf[16:20]) != 0 {
		t.Error("the send stamp overwrote the sequence or the run id")
	}
}
