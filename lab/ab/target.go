package ab

import (
	"context"
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// Target is where an experiment runs: the lab (traffic and receivers of its
// own) or a real UPF's device (counters only; the operator drives traffic).
type Target interface {
	// Describe is a one-line description for output.
	Describe() string
	// Scale is the factor applied to every rate (the lab's rate scale; 1 on
	// a device).
	Scale() float64
	// Apply makes the device enforce the arm (its rates scaled by Scale)
	// and returns the backend's report.
	Apply(ctx context.Context, arm Arm) (shaper.Report, error)
	// Counters reads the device's class counters by class handle.
	Counters(ctx context.Context) (map[string]shaper.Counters, error)
	// Traffic runs the arm's traffic from start for d. It returns one
	// per-second goodput series (Mbit/s) per flow name, plus per-flow loss
	// per second and TCP retransmits; a device target returns nil after
	// waiting.
	Traffic(ctx context.Context, arm Arm, start time.Time, d time.Duration) (map[string]FlowTraffic, error)
	// Close restores the device (removes what the experiment created).
	Close(ctx context.Context) error
}

// FlowTraffic is what a target's receivers measured for one flow.
type FlowTraffic struct {
	// Mbps and Lost are per second from the start of traffic (Lost -1 =
	// unknown).
	Mbps []float64
	Lost []int64
	// Retransmits is TCP's retransmitted segments.
	Retransmits uint64
	// DelayMs are the one-way delays in ms of the packets sent in each
	// second, in arrival order, and Reordered the packets per second that
	// arrived after one sent later (nil: not measured).
	DelayMs   [][]float32
	Reordered []int64
}
