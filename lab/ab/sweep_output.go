package ab

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// sweepCell finds a sweep's run.
func (r *SweepResults) run(scenario string, payload int, unit string) (SweepRun, bool) {
	for _, x := range r.Runs {
		if x.Scenario == scenario && x.Payload == payload && x.Unit == unit {
			return x, true
		}
	}
	return SweepRun{}, false
}

// payloads and units in the order they ran.
func (r *SweepResults) axes() (payloads []int, units []string) {
	seenP, seenU := map[int]bool{}, map[string]bool{}
	for _, x := range r.Runs {
		if !seenP[x.Payload] {
			seenP[x.Payload] = true
			payloads = append(payloads, x.Payload)
		}
		if !seenU[x.Unit] {
			seenU[x.Unit] = true
			units = append(units, x.Unit)
		}
	}
	sort.Ints(payloads)
	return payloads, units
}

// flowIP returns a flow's rate of IP packets in a run, in the contracts'
// Mbit/s (the lab's rate scale undone), and whether it ran.
func (r *SweepResults) flowIP(scenario string, payload int, unit, flow string) (FlowRun, float64, bool) {
	x, ok := r.run(scenario, payload, unit)
	if !ok {
		return FlowRun{}, 0, false
	}
	for _, f := range x.Flows {
		if f.Name == flow {
			return f, f.IP / r.RateScale, true
		}
	}
	return FlowRun{}, 0, false
}

// Failed counts the failed checks of one unit ("" for all).
func (r *SweepResults) Failed(unit string) (failed, total int) {
	for _, x := range r.Runs {
		if unit != "" && x.Unit != unit && !strings.HasPrefix(x.Unit, unit+"/") {
			continue
		}
		for _, c := range x.Checks {
			total++
			if !c.OK {
				failed++
			}
		}
	}
	return failed, total
}

// WriteSweepTable prints the error of each accounting unit against the
// contracts, per payload size.
func WriteSweepTable(w io.Writer, r *SweepResults) error {
	fmt.Fprintf(w, "lab sweep: rate scale %g (%s: every rate below is measured ×%g and shown ÷%g, in the contracts' Mbit/s); runs of %g s, seconds %d-%d; rates of the user's IP packets\n",
		r.RateScale, "GTPQOS_LAB_RATE_SCALE", r.RateScale, r.RateScale, r.DurationS, r.WindowS[0], r.WindowS[1])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "payload\tIP packet\taccounting\tMBR 15, offered 2×\tdropped (want 50%)\tMBR 15, offered 0.99×: dropped / lost\tGBR 6 + greedy BE\tseed A (15/18)\tseed B (5/6)\tseed: N3 wire (link 30)\tchecks")
	payloads, units := r.axes()
	for _, p := range payloads {
		for i, u := range units {
			row := []string{"", "", u}
			if i == 0 {
				row[0], row[1] = fmt.Sprintf("%d B", p), fmt.Sprintf("%d B", p+InnerUDPOverhead)
			}
			row = append(row, r.errCell("mbr", p, u, "A", MBRScenarioMBR/1e6), r.dropCell(p, u), r.lostCell(p, u), r.errCell("gbr", p, u, "A", GBRScenarioGBR/1e6),
				r.rateCell("seed", p, u, "A"), r.rateCell("seed", p, u, "B"), r.wireCell("seed", p, u), r.checksCell(p, u))
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, u := range units {
		f, n := r.Failed(u)
		fmt.Fprintf(w, "accounting %s: %d of %d checks passed\n", u, n-f, n)
	}
	return nil
}

func (r *SweepResults) errCell(sc string, p int, u, flow string, want float64) string {
	if _, ip, ok := r.flowIP(sc, p, u, flow); ok {
		return fmt.Sprintf("%.3f (%+.2f%%)", ip, 100*(ip/want-1))
	}
	return "-"
}

func (r *SweepResults) rateCell(sc string, p int, u, flow string) string {
	if _, ip, ok := r.flowIP(sc, p, u, flow); ok {
		return fmt.Sprintf("%.3f", ip)
	}
	return "-"
}

// wireCell is the N3 frames the scenario's flows sent, in the contracts'
// Mbit/s: above the link when the classes' rates, counted in user packets,
// need more than the wire has.
func (r *SweepResults) wireCell(sc string, p int, u string) string {
	x, ok := r.run(sc, p, u)
	if !ok {
		return "-"
	}
	var w float64
	for _, f := range x.Flows {
		w += f.Outer
	}
	return fmt.Sprintf("%.3f", w/r.RateScale)
}

func (r *SweepResults) dropCell(p int, u string) string {
	if f, _, ok := r.flowIP("mbr", p, u, "A"); ok && f.LossFrac >= 0 {
		return fmt.Sprintf("%.2f%%", 100*f.LossFrac)
	}
	return "-"
}

func (r *SweepResults) lostCell(p int, u string) string {
	if f, _, ok := r.flowIP("mbr", p, u, "B"); ok {
		return fmt.Sprintf("%d / %d", f.Drops, f.Lost)
	}
	return "-"
}

func (r *SweepResults) checksCell(p int, u string) string {
	pass, n := 0, 0
	for _, x := range r.Runs {
		if x.Payload == p && x.Unit == u {
			for _, c := range x.Checks {
				n++
				if c.OK {
					pass++
				}
			}
		}
	}
	return fmt.Sprintf("%d/%d", pass, n)
}

// WriteSweepFiles writes sweep.json, sweep.csv (one row per run and flow)
// and fig3-error-vs-size.svg into dir.
func WriteSweepFiles(dir string, r *SweepResults) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output dir %s: %w", dir, err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode sweep.json: %w", err)
	}
	var b csvBuf
	cw := csv.NewWriter(&b)
	_ = cw.Write([]string{"scenario", "payload_bytes", "accounting", "flow", "gbr_mbps", "mbr_mbps", "ip_mbps", "goodput_mbps", "lost", "loss_fraction", "counted_bytes", "frame_bytes", "backend"})
	for _, x := range r.Runs {
		for _, f := range x.Flows {
			_ = cw.Write([]string{x.Scenario, strconv.Itoa(x.Payload), x.Unit, f.Name, f3(f.GBR), f3(f.MBR), f3(f.IP), f3(f.Goodput),
				strconv.FormatInt(f.Lost, 10), f3(f.LossFrac), strconv.FormatFloat(f.Counted, 'f', 1, 64), strconv.FormatFloat(f.Frame, 'f', 1, 64), x.Backend})
		}
	}
	cw.Flush()
	var paths []string
	for _, f := range []struct {
		name string
		data []byte
	}{{"sweep.json", append(js, '\n')}, {"sweep.csv", b.data}, {"fig3-error-vs-size.svg", SweepFigure(r)}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return paths, fmt.Errorf("write %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// SweepFigure draws the error of the MBR-capped and the GBR-guaranteed
// flow against their contracts (in user IP packets) versus the packet
// size, per accounting unit, with the ±tolerance band and what frame
// accounting must give: -58/(IP packet + 58).
func SweepFigure(r *SweepResults) []byte {
	const W, H = 820, 460
	const x0, y0, x1, y1 = 80.0, 60.0, 790.0, 380.0
	d := newSVG(W, H)
	d.text(W/2, 24, "middle", `font-size="15" font-weight="bold"`, "Rate error against the contract versus packet size")
	d.text(W/2, 44, "middle", `fill="#555"`, fmt.Sprintf("lab, rate scale %g; rate of the user's IP packets vs MBR (offered 2×) and GBR (next to a greedy flow); band: ±%g%%", r.RateScale, 100*r.Tolerance))
	payloads, units := r.axes()
	if len(payloads) == 0 {
		return d.bytes()
	}
	lo, hi := math.Log(float64(payloads[0]+InnerUDPOverhead)), math.Log(float64(payloads[len(payloads)-1]+InnerUDPOverhead))
	if hi <= lo {
		hi = lo + 1
	}
	xOf := func(ip float64) float64 { return x0 + (x1-x0)*(math.Log(ip)-lo)/(hi-lo) }
	const top, bottom = 5.0, -45.0
	yOf := func(v float64) float64 { return y0 + (y1-y0)*(top-math.Max(bottom, math.Min(top, v)))/(top-bottom) }
	for v := bottom; v <= top; v += 5 {
		d.line(x0, yOf(v), x1, yOf(v), "#e0e0e0", 1, "")
		d.text(x0-6, yOf(v)+4, "end", "", trimFloat(v)+"%")
	}
	d.rect(x0, yOf(100*r.Tolerance), x1-x0, yOf(-100*r.Tolerance)-yOf(100*r.Tolerance), "#c8e6c9")
	d.line(x0, y0, x0, y1, "#333", 1, "")
	d.line(x0, y1, x1, y1, "#333", 1, "")
	for _, p := range payloads {
		ip := float64(p + InnerUDPOverhead)
		d.text(xOf(ip), y1+16, "middle", `font-size="11"`, fmt.Sprintf("%d", p+InnerUDPOverhead))
	}
	d.text((x0+x1)/2, y1+34, "middle", "", "user IP packet, bytes (UDP payload + 28; log scale)")
	var expected []string
	for ip := math.Exp(lo); ip <= math.Exp(hi)*1.001; ip *= 1.05 {
		expected = append(expected, fmt.Sprintf("%.1f,%.1f", xOf(ip), yOf(-100*58/(ip+58))))
	}
	fmt.Fprintf(&d.b, `<polyline points="%s" fill="none" stroke="#999" stroke-width="1.5" stroke-dasharray="2,4"/>`+"\n", strings.Join(expected, " "))
	series := []struct {
		sc, label string
		want      float64
	}{{"mbr", "MBR", MBRScenarioMBR / 1e6}, {"gbr", "GBR", GBRScenarioGBR / 1e6}}
	k := 0
	for ui, u := range units {
		for si, s := range series {
			var pts []string
			for _, p := range payloads {
				if _, ip, ok := r.flowIP(s.sc, p, u, "A"); ok {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(float64(p+InnerUDPOverhead)), yOf(100*(ip/s.want-1))))
				}
			}
			if len(pts) == 0 {
				continue
			}
			c := flowColors[(2*ui+si)%len(flowColors)]
			dash := []string{"", ` stroke-dasharray="8,5"`}[si%2]
			fmt.Fprintf(&d.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5"%s/>`+"\n", strings.Join(pts, " "), c, dash)
			for _, pt := range pts {
				xy := strings.Split(pt, ",")
				fmt.Fprintf(&d.b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", xy[0], xy[1], c)
			}
			lx := x0 + 10 + 190*float64(k)
			fmt.Fprintf(&d.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`+"\n", lx, float64(H-28), lx+18, float64(H-28), c, dash)
			d.text(lx+22, float64(H-24), "start", `font-size="11"`, fmt.Sprintf("%s accounting, %s", u, s.label))
			k++
		}
	}
	d.text(x1, yOf(-100*58/(float64(payloads[0]+InnerUDPOverhead)+58))-6, "end", `font-size="11" fill="#777"`, "dotted: -58/(IP+58), a class counting N3 frames")
	return d.bytes()
}
