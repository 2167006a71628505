package ab

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strings"
)

// Palettes: arms (bars) and flows (lines).
var (
	armColors  = []string{"#9e9e9e", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"}
	flowColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"}
)

const (
	gbrColor = "#d62728"
	mbrColor = "#ff7f0e"
)

// svgDoc is a minimal SVG writer: every text goes through XML escaping.
type svgDoc struct{ b bytes.Buffer }

func newSVG(w, h int) *svgDoc {
	d := &svgDoc{}
	fmt.Fprintf(&d.b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&d.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&d.b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	return d
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (d *svgDoc) text(x, y float64, anchor, extra, s string) {
	fmt.Fprintf(&d.b, `<text x="%.1f" y="%.1f" text-anchor="%s" %s>%s</text>`+"\n", x, y, anchor, extra, esc(s))
}

func (d *svgDoc) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	da := ""
	if dash != "" {
		da = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
	}
	fmt.Fprintf(&d.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"%s/>`+"\n", x1, y1, x2, y2, stroke, width, da)
}

func (d *svgDoc) rect(x, y, w, h float64, fill string) {
	fmt.Fprintf(&d.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y, w, h, fill)
}

func (d *svgDoc) bytes() []byte {
	d.b.WriteString("</svg>\n")
	return d.b.Bytes()
}

// niceMax rounds v up to 1, 2, 2.5 or 5 × 10^k and returns it with a tick step.
func niceMax(v float64) (top, step float64) {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1, 0.2
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p {
			top = m * p
			break
		}
	}
	return top, top / 5
}

// yAxis draws gridlines and labels for [0, top] over plot (x0, y0)-(x1, y1).
func (d *svgDoc) yAxis(x0, y0, x1, y1, top, step float64, label string) {
	for v := 0.0; v <= top*1.0001; v += step {
		y := y1 - (y1-y0)*v/top
		d.line(x0, y, x1, y, "#e0e0e0", 1, "")
		d.text(x0-6, y+4, "end", "", trimFloat(v))
	}
	d.line(x0, y0, x0, y1, "#333", 1, "")
	d.line(x0, y1, x1, y1, "#333", 1, "")
	fmt.Fprintf(&d.b, `<text x="%.1f" y="%.1f" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
		x0-40, (y0+y1)/2, x0-40, (y0+y1)/2, esc(label))
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// Figure1 draws mean goodput per flow and arm as bars with 95% CI error
// bars, and each flow's GBR (red dashed) and MBR (orange dashed) markers.
func Figure1(res *Results) []byte {
	const W, H = 820, 440
	const x0, y0, x1, y1 = 70.0, 50.0, 800.0, 370.0
	d := newSVG(W, H)
	title := "Mean receiver goodput per flow"
	if res.CountersOnly {
		title = "Payload rate per flow (from N3 class counters)"
	}
	d.text(W/2, 24, "middle", `font-size="15" font-weight="bold"`, title)
	d.text(W/2, 42, "middle", `fill="#555"`, fmt.Sprintf("seconds %d-%d, error bars: 95%% CI over %d run(s); red dashed: GBR, orange dotted: MBR", res.WindowFrom, res.WindowTo, res.Runs))
	if len(res.Arms) == 0 || len(res.Arms[0].Flows) == 0 {
		return d.bytes()
	}
	flows := res.Arms[0].Flows
	var vmax float64
	for _, as := range res.Arms {
		for _, f := range as.Flows {
			vmax = math.Max(vmax, math.Max(f.Goodput.Hi, f.GBR))
			if f.HasMBR {
				vmax = math.Max(vmax, f.MBR)
			}
		}
	}
	top, step := niceMax(vmax * 1.08)
	d.yAxis(x0, y0, x1, y1, top, step, "Mbit/s")
	groupW := (x1 - x0) / float64(len(flows))
	nArms := len(res.Arms)
	barW := groupW * 0.7 / float64(nArms)
	yOf := func(v float64) float64 { return y1 - (y1-y0)*math.Max(0, math.Min(v, top))/top }
	for gi, f0 := range flows {
		gx := x0 + groupW*float64(gi)
		for ai, as := range res.Arms {
			if gi >= len(as.Flows) {
				continue
			}
			f := as.Flows[gi]
			bx := gx + groupW*0.15 + barW*float64(ai)
			by := yOf(f.Goodput.Mean)
			d.rect(bx+2, by, barW-4, y1-by, armColors[ai%len(armColors)])
			cx := bx + barW/2
			if f.Goodput.N > 1 {
				d.line(cx, yOf(f.Goodput.Hi), cx, yOf(f.Goodput.Lo), "#000", 1.5, "")
				d.line(cx-6, yOf(f.Goodput.Hi), cx+6, yOf(f.Goodput.Hi), "#000", 1.5, "")
				d.line(cx-6, yOf(f.Goodput.Lo), cx+6, yOf(f.Goodput.Lo), "#000", 1.5, "")
			}
			if y1-by > 20 {
				d.text(cx, y1-8, "middle", `font-size="11" fill="#ffffff" font-weight="bold"`, fmt.Sprintf("%.3f", f.Goodput.Mean))
			} else {
				d.text(cx, by-6, "middle", `font-size="11"`, fmt.Sprintf("%.3f", f.Goodput.Mean))
			}
		}
		if f0.HasGBR {
			y := yOf(f0.GBR)
			d.line(gx+groupW*0.08, y, gx+groupW*0.92, y, gbrColor, 2, "6,4")
		}
		if f0.HasMBR {
			y := yOf(f0.MBR)
			d.line(gx+groupW*0.08, y, gx+groupW*0.92, y, mbrColor, 2, "2,3")
		}
		d.text(gx+groupW/2, y1+20, "middle", "", contractLabel(f0))
	}
	// Legend.
	lx := x0
	for ai, as := range res.Arms {
		d.rect(lx, H-36, 14, 14, armColors[ai%len(armColors)])
		label := fmt.Sprintf("%s (aggregate %.3f Mbit/s, %.2f%% of ceiling)", as.Arm.Name, as.Aggregate.Mean, 100*as.Utilisation)
		d.text(lx+20, H-24, "start", "", label)
		lx += 20 + float64(len(label))*6.6 + 20
	}
	return d.bytes()
}

// Figure2 draws, per arm, each flow's cross-run mean goodput per second
// over the analysis window, with 95% CI bands.
func Figure2(res *Results) []byte {
	const W = 820
	const panelH = 240.0
	n := max(len(res.Arms), 1)
	H := int(60 + panelH*float64(n) + 40)
	d := newSVG(W, H)
	d.text(W/2, 24, "middle", `font-size="15" font-weight="bold"`, "Receiver goodput per second (cross-run mean)")
	d.text(W/2, 42, "middle", `fill="#555"`, fmt.Sprintf("shaded: 95%% CI over %d run(s); seconds %d-%d", res.Runs, res.WindowFrom, res.WindowTo))
	var vmax float64
	for _, as := range res.Arms {
		for _, f := range as.Flows {
			for s := res.WindowFrom; s < res.WindowTo && s < len(f.Series); s++ {
				vmax = math.Max(vmax, f.Series[s].Hi)
			}
		}
	}
	top, step := niceMax(vmax * 1.1)
	for ai, as := range res.Arms {
		py := 60 + panelH*float64(ai)
		x0, y0, x1, y1 := 70.0, py+20, 800.0, py+panelH-40
		title := as.Arm.Name
		if as.Mode != as.Arm.Name {
			title += " (" + as.Mode + ")"
		}
		d.text(x0, py+12, "start", `font-weight="bold"`, title)
		d.yAxis(x0, y0, x1, y1, top, step, "Mbit/s")
		span := float64(max(res.WindowTo-res.WindowFrom-1, 1))
		xOf := func(s int) float64 { return x0 + (x1-x0)*float64(s-res.WindowFrom)/span }
		yOf := func(v float64) float64 { return y1 - (y1-y0)*math.Max(0, math.Min(v, top))/top }
		for s := res.WindowFrom; s < res.WindowTo; s += max(1, (res.WindowTo-res.WindowFrom)/10) {
			d.text(xOf(s), y1+16, "middle", `font-size="11"`, fmt.Sprintf("%d", s))
		}
		d.text((x0+x1)/2, y1+32, "middle", `font-size="11"`, "second of run")
		for fi, f := range as.Flows {
			c := flowColors[fi%len(flowColors)]
			var upper, lower, mid []string
			for s := res.WindowFrom; s < res.WindowTo && s < len(f.Series); s++ {
				e := f.Series[s]
				upper = append(upper, fmt.Sprintf("%.1f,%.1f", xOf(s), yOf(e.Hi)))
				lower = append([]string{fmt.Sprintf("%.1f,%.1f", xOf(s), yOf(e.Lo))}, lower...)
				mid = append(mid, fmt.Sprintf("%.1f,%.1f", xOf(s), yOf(e.Mean)))
			}
			if len(mid) == 0 {
				continue
			}
			fmt.Fprintf(&d.b, `<polygon points="%s" fill="%s" fill-opacity="0.2" stroke="none"/>`+"\n", strings.Join(append(upper, lower...), " "), c)
			dash := []string{"", ` stroke-dasharray="9,5"`, ` stroke-dasharray="2,4"`}[fi%3]
			fmt.Fprintf(&d.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5"%s/>`+"\n", strings.Join(mid, " "), c, dash)
			lx := x0 + 200 + 180*float64(fi)
			fmt.Fprintf(&d.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`+"\n", lx, py+8, lx+16, py+8, c, dash)
			d.text(lx+18, py+12, "start", `font-size="11"`, fmt.Sprintf("flow %s: %.3f Mbit/s", f.Name, f.Goodput.Mean))
		}
	}
	return d.bytes()
}
