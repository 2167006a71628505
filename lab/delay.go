package lab

import (
	"encoding/binary"
	"time"
)

// One-way delay of the built-in UDP traffic. The sender writes the time
// since the run's start into payload bytes 20..27 as it sends (senders
// and receivers are goroutines of one process, so they share the run's
// start and its monotonic clock); the receiver takes the packet's kernel
// receive time onto the monotonic clock (onMonotonic) and subtracts: the
// packet's one-way delay, queueing in the shaper plus the stand-ins'
// forwarding.

// delayRecorder collects one flow's one-way delays by the second the
// packets were sent in (from the run's start), and counts reordered
// packets: those arriving after one sent later.
type delayRecorder struct {
	ms   [][]float32
	next uint64 // one past the highest sequence number seen
	any  bool
}

func newDelayRecorder(seconds int) *delayRecorder {
	return &delayRecorder{ms: make([][]float32, seconds)}
}

// add records a packet with sequence number seq, sent and received at
// the given times since the run's start (sent 0: not stamped). It reports
// whether the packet arrived out of order.
func (d *delayRecorder) add(seq uint64, sent, rx time.Duration) (reordered bool) {
	reordered = d.any && seq < d.next
	if !reordered {
		d.next, d.any = seq+1, true
	}
	if sent <= 0 || rx < sent {
		return reordered
	}
	if s := int(sent / time.Second); s < len(d.ms) {
		d.ms[s] = append(d.ms[s], float32(float64(rx-sent)/1e6))
	}
	return reordered
}

// stampSend writes the time since start into a built-in UDP payload.
func stampSend(buf []byte, start time.Time) {
	binary.BigEndian.PutUint64(buf[20:], uint64(time.Since(start)))
}

// sentAt reads the send time (since the run's start) from a built-in UDP
// payload (0: none).
func sentAt(buf []byte) time.Duration { return time.Duration(binary.BigEndian.Uint64(buf[20:])) }
