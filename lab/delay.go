package lab

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

// One-way delay of the built-in UDP traffic. The sender writes its
// CLOCK_MONOTONIC time into payload bytes 20..27 as it sends; the receiver
// takes the packet's kernel receive time (SO_TIMESTAMPNS, CLOCK_REALTIME)
// onto CLOCK_MONOTONIC and subtracts. Every namespace of the lab reads the
// host's clocks, so the difference is the packet's one-way delay: queueing
// in the shaper plus the stand-ins' forwarding.

// monoNow is CLOCK_MONOTONIC in nanoseconds.
func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for this clock
	return ts.Nano()
}

// monoOf moves a CLOCK_REALTIME time taken moments ago (a kernel receive
// time) onto CLOCK_MONOTONIC, measuring only the moments since it on the
// wall clock (a step of the wall clock in between would show as delay).
func monoOf(at time.Time) int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &ts)
	mono := monoNow()
	return mono - (ts.Nano() - at.UnixNano())
}

// delayRecorder collects one flow's one-way delays by the second the
// packets were sent in (from the run's start), and counts reordered
// packets: those arriving after one sent later.
type delayRecorder struct {
	start int64 // the run's start on CLOCK_MONOTONIC
	ms    [][]float32
	next  uint64 // one past the highest sequence number seen
	any   bool
}

func newDelayRecorder(start time.Time, seconds int) *delayRecorder {
	return &delayRecorder{start: monoNow() - int64(time.Since(start)), ms: make([][]float32, seconds)}
}

// add records a packet with sequence number seq, its sender's stamp sent
// (0: none) and its receive time on CLOCK_MONOTONIC. It reports whether
// the packet arrived out of order.
func (d *delayRecorder) add(seq uint64, sent, rx int64) (reordered bool) {
	reordered = d.any && seq < d.next
	if !reordered {
		d.next, d.any = seq+1, true
	}
	if sent == 0 || rx < sent {
		return reordered
	}
	if s := int((sent - d.start) / int64(time.Second)); sent >= d.start && s < len(d.ms) {
		d.ms[s] = append(d.ms[s], float32(float64(rx-sent)/1e6))
	}
	return reordered
}

// stampSend writes the send time into a built-in UDP payload.
func stampSend(buf []byte) { binary.BigEndian.PutUint64(buf[20:], uint64(monoNow())) }

// sentAt reads the send time from a built-in UDP payload (0: none).
func sentAt(buf []byte) int64 { return int64(binary.BigEndian.Uint64(buf[20:])) }
