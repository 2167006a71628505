package ab

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// hasDelay says whether any flow of any arm has delay measurements.
func hasDelay(res *Results) bool {
	for _, as := range res.Arms {
		for _, f := range as.Flows {
			if f.Delay != nil {
				return true
			}
		}
	}
	return false
}

// writeDelayTable prints each flow's one-way delay, jitter and reordered
// packets per arm (nothing when no delay was measured).
func writeDelayTable(w io.Writer, res *Results) error {
	if !hasDelay(res) {
		return nil
	}
	fmt.Fprintf(w, "one-way delay of the packets sent in seconds %d-%d, ms: p50 / p99 / p99.9 / max, jitter (mean |ΔD|), reordered packets; mean over %d run(s) per arm\n",
		res.WindowFrom, res.WindowTo, res.Runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"config", "backend"}
	for _, f := range res.Arms[0].Flows {
		head = append(head, "Flow "+f.Name)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, as := range res.Arms {
		row := []string{as.Arm.Name, armBackend(as.Arm)}
		for _, f := range as.Flows {
			row = append(row, fmtDelay(f.Delay))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func fmtDelay(d *DelayStats) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%s / %s / %s / %s, jitter %s, reordered %.0f", fmtMs(d.P50), fmtMs(d.P99), fmtMs(d.P999), fmtMs(d.Max), fmtMs(d.Jitter), d.Reordered)
}

// fmtMs gives a delay three significant digits.
func fmtMs(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// delayColumns are results.csv's delay columns, after the older ones.
var delayColumns = []string{"delay_samples", "delay_p50_ms", "delay_p99_ms", "delay_p999_ms", "delay_max_ms", "jitter_ms", "reordered"}

// delayCells are a run's delay cells (empty when not measured).
func delayCells(d *DelayStats) []string {
	if d == nil {
		return make([]string, len(delayColumns))
	}
	return []string{strconv.FormatFloat(d.Samples, 'f', 0, 64), f3(d.P50), f3(d.P99), f3(d.P999), f3(d.Max), f3(d.Jitter),
		strconv.FormatFloat(d.Reordered, 'f', 0, 64)}
}

// FigureDelay draws each flow's one-way delay per arm on a log scale: a
// bar to the p99 with ticks at p50, p99.9 and max (nothing to draw when no
// delay was measured: the axes only).
func FigureDelay(res *Results) []byte {
	const W, H = 820, 440
	const x0, y0, x1, y1 = 70.0, 50.0, 800.0, 370.0
	d := newSVG(W, H)
	d.text(W/2, 24, "middle", `font-size="15" font-weight="bold"`, "One-way delay per flow")
	d.text(W/2, 42, "middle", `fill="#555"`, fmt.Sprintf("packets sent in seconds %d-%d, mean over %d run(s); bar: p99, ticks: p50 (short), p99.9, max (long)", res.WindowFrom, res.WindowTo, res.Runs))
	if len(res.Arms) == 0 || len(res.Arms[0].Flows) == 0 {
		return d.bytes()
	}
	lo, hi := 0.01, 1.0
	for _, as := range res.Arms {
		for _, f := range as.Flows {
			if f.Delay != nil {
				hi = math.Max(hi, f.Delay.Max)
			}
		}
	}
	decades := math.Ceil(math.Log10(hi / lo))
	yOf := func(v float64) float64 {
		return y1 - (y1-y0)*math.Max(0, math.Min(math.Log10(math.Max(v, lo)/lo), decades))/decades
	}
	for k := 0.0; k <= decades; k++ {
		v := lo * math.Pow(10, k)
		d.line(x0, yOf(v), x1, yOf(v), "#e0e0e0", 1, "")
		d.text(x0-6, yOf(v)+4, "end", "", trimFloat(v))
	}
	d.line(x0, y0, x0, y1, "#333", 1, "")
	d.line(x0, y1, x1, y1, "#333", 1, "")
	fmt.Fprintf(&d.b, `<text x="%.1f" y="%.1f" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">ms (log)</text>`+"\n", x0-45, (y0+y1)/2, x0-45, (y0+y1)/2)
	flows := res.Arms[0].Flows
	groupW := (x1 - x0) / float64(len(flows))
	barW := groupW * 0.7 / float64(len(res.Arms))
	for gi, f0 := range flows {
		gx := x0 + groupW*float64(gi)
		for ai, as := range res.Arms {
			if gi >= len(as.Flows) || as.Flows[gi].Delay == nil {
				continue
			}
			st := as.Flows[gi].Delay
			bx := gx + groupW*0.15 + barW*float64(ai)
			d.rect(bx+2, yOf(st.P99), barW-4, y1-yOf(st.P99), armColors[ai%len(armColors)])
			cx := bx + barW/2
			for _, t := range []struct{ v, half float64 }{{st.P50, 4}, {st.P999, 8}, {st.Max, 10}} {
				d.line(cx-t.half, yOf(t.v), cx+t.half, yOf(t.v), "#000", 1.5, "")
			}
			d.line(cx, yOf(st.P99), cx, yOf(st.Max), "#000", 1, "")
			d.text(cx, yOf(st.Max)-6, "middle", `font-size="11"`, fmtMs(st.P99))
		}
		d.text(gx+groupW/2, y1+20, "middle", "", contractLabel(f0))
	}
	lx := x0
	for ai, as := range res.Arms {
		d.rect(lx, H-36, 14, 14, armColors[ai%len(armColors)])
		d.text(lx+20, H-24, "start", "", as.Arm.Name)
		lx += 20 + float64(len(as.Arm.Name))*6.6 + 20
	}
	return d.bytes()
}
