package ab

import (
	"math"
	"slices"
	"time"
)

// DelayStats are one flow's one-way delays over the analysis window (the
// packets sent in it), in ms.
type DelayStats struct {
	// Samples is the number of packets measured (in a summary: the mean
	// per run).
	Samples float64 `json:"samples"`
	// P50, P99, P999 and Max are percentiles of the one-way delay (nearest
	// rank).
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
	// Jitter is the mean absolute difference between the one-way delays
	// of consecutively received packets: RFC 3550's D(i-1, i), averaged
	// over the window instead of smoothed with gain 1/16.
	Jitter float64 `json:"jitter_ms"`
	// Reordered counts packets that arrived after one sent later.
	Reordered float64 `json:"reordered"`
}

// delayStats computes a flow's delay statistics from its per-second
// delays (by second of sending, each in arrival order) and per-second
// reordered counts over seconds [w0, w1); nil when nothing was measured.
func delayStats(delays [][]float32, reordered []int64, w0, w1 int) *DelayStats {
	var xs []float64
	var jsum float64
	for s := w0; s < w1 && s < len(delays); s++ {
		for _, d := range delays[s] {
			if n := len(xs); n > 0 {
				jsum += math.Abs(float64(d) - xs[n-1])
			}
			xs = append(xs, float64(d))
		}
	}
	if len(xs) == 0 {
		return nil
	}
	st := &DelayStats{Samples: float64(len(xs))}
	if len(xs) > 1 {
		st.Jitter = jsum / float64(len(xs)-1)
	}
	slices.Sort(xs)
	rank := func(q float64) float64 { return xs[min(len(xs)-1, max(0, int(math.Ceil(q*float64(len(xs))))-1))] }
	st.P50, st.P99, st.P999, st.Max = rank(0.5), rank(0.99), rank(0.999), xs[len(xs)-1]
	for s := w0; s < w1 && s < len(reordered); s++ {
		st.Reordered += float64(reordered[s])
	}
	return st
}

// meanDelay is the mean of each statistic over runs that measured delay
// (nil: none did).
func meanDelay(runs []*DelayStats) *DelayStats {
	var m DelayStats
	n := 0
	for _, r := range runs {
		if r == nil {
			continue
		}
		n++
		m.Samples += r.Samples
		m.P50 += r.P50
		m.P99 += r.P99
		m.P999 += r.P999
		m.Max += r.Max
		m.Jitter += r.Jitter
		m.Reordered += r.Reordered
	}
	if n == 0 {
		return nil
	}
	k := float64(n)
	return &DelayStats{Samples: m.Samples / k, P50: m.P50 / k, P99: m.P99 / k, P999: m.P999 / k, Max: m.Max / k, Jitter: m.Jitter / k, Reordered: m.Reordered / k}
}

// windowSeconds is the analysis window in whole seconds.
func windowSeconds(o *Options) (int, int) {
	return int(o.WindowStart / time.Second), int(o.WindowEnd / time.Second)
}
