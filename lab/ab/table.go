package ab

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// seedRow is one row of the seed experiment's result table (Mbit/s of
// receiver goodput, seconds 10-50 of 60 s runs).
type seedRow struct{ a, b, c, agg float64 }

// seedTable holds the seed's published means, by shaper mode.
var seedTable = map[string]seedRow{
	"static": {9.327, 9.321, 9.327, 27.975},
	"aware":  {16.716, 5.598, 5.659, 27.973},
}

// contractLabel formats a flow's contract as the seed's table heads do.
func contractLabel(f FlowSummary) string {
	switch {
	case f.HasGBR && f.HasMBR:
		return fmt.Sprintf("Flow %s (GBR %g, MBR %g)", f.Name, round3(f.GBR), round3(f.MBR))
	case f.HasGBR:
		return fmt.Sprintf("Flow %s (GBR %g)", f.Name, round3(f.GBR))
	case f.HasMBR:
		return fmt.Sprintf("Flow %s (MBR %g)", f.Name, round3(f.MBR))
	}
	return fmt.Sprintf("Flow %s (best effort)", f.Name)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// isSeedLayout says whether the arms carry the seed's flows A, B, C.
func isSeedLayout(as ArmSummary) bool {
	if len(as.Flows) != 3 {
		return false
	}
	for i, n := range []string{"A", "B", "C"} {
		if as.Flows[i].Name != n {
			return false
		}
	}
	return true
}

// WriteTable prints the results in the seed's layout, with the seed's
// numbers beside ours where the arms are the seed's (flows A, B, C; static
// or aware mode), then the N3 frame, the payload ceiling and compliance.
func WriteTable(w io.Writer, res *Results) error {
	if len(res.Arms) == 0 {
		_, err := fmt.Fprintln(w, "no results")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	what := "receiver goodput"
	if res.CountersOnly {
		what = "payload rate estimated from N3 class counters"
	}
	fmt.Fprintf(w, "%s, Mbit/s, mean ± 95%% CI over %d run(s) per arm, seconds %d-%d of %g s, %s",
		what, res.Runs, res.WindowFrom, res.WindowTo, res.DurationS, res.Proto)
	if res.Generator != "" {
		fmt.Fprintf(w, " (%s)", res.Generator)
	}
	fmt.Fprintln(w)
	head := []string{"config", "backend"}
	for _, f := range res.Arms[0].Flows {
		head = append(head, contractLabel(f))
	}
	head = append(head, "aggregate", "of ceiling")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	scaleNote := ""
	for _, as := range res.Arms {
		row := []string{fmt.Sprintf("%s (gtpqos)", as.Arm.Name), armBackend(as.Arm)}
		for _, f := range as.Flows {
			row = append(row, fmtEst(f.Goodput))
		}
		row = append(row, fmtEst(as.Aggregate), fmt.Sprintf("%.2f%%", 100*as.Utilisation))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
		if seed, ok := seedTable[as.Mode]; ok && isSeedLayout(as) && !res.CountersOnly {
			s := res.RateScale
			label := fmt.Sprintf("%s (seed)", as.Arm.Name)
			if s != 1 {
				label = fmt.Sprintf("%s (seed ×%g)", as.Arm.Name, s)
				scaleNote = fmt.Sprintf("rates scaled by %g (GTPQOS_LAB_RATE_SCALE); seed rows scaled to match", s)
			}
			ceil := 30 * s * 1200 / 1286
			fmt.Fprintf(tw, "%s\t-\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f%%\n", label, seed.a*s, seed.b*s, seed.c*s, seed.agg*s, 100*seed.agg*s/ceil)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if scaleNote != "" {
		fmt.Fprintln(w, scaleNote)
	}
	if line := accountingLine(res.Arms); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, as := range res.Arms {
		payload := "payload"
		if res.Payload > 0 {
			payload = fmt.Sprintf("%d", res.Payload)
		}
		fmt.Fprintf(w, "%s: N3 frame %.1f bytes (class counters%s) -> payload ceiling %g × %s/%.0f = %.3f Mbit/s; ",
			as.Arm.Name, as.Frame, countedNote(as), round3(as.LinkRate), payload, as.Frame, as.Ceiling)
		var parts []string
		for _, f := range as.Flows {
			if f.HasGBR {
				parts = append(parts, fmt.Sprintf("%s GBR %d/%d %s", f.Name, f.GBRPasses, as.Runs, verdict(f.GBRPasses, as.Runs)))
			}
			if f.HasMBR {
				parts = append(parts, fmt.Sprintf("%s MBR %d/%d %s", f.Name, f.MBRPasses, as.Runs, verdict(f.MBRPasses, as.Runs)))
			}
			if f.Retransmits > 0 || res.Proto == "tcp" {
				parts = append(parts, fmt.Sprintf("%s retrans %.0f", f.Name, f.Retransmits))
			}
		}
		fmt.Fprintf(w, "compliance (±%g%%): %s\n", 100*res.Tolerance, strings.Join(parts, ", "))
	}
	return writeDelayTable(w, res)
}

// accountingLine says which bytes each arm's classes counted, in one line
// ("" when no arm says).
func accountingLine(arms []ArmSummary) string {
	var names []string
	byUnit := map[string][]string{}
	for _, as := range arms {
		if as.Accounting == "" {
			continue
		}
		if _, ok := byUnit[as.Accounting]; !ok {
			names = append(names, as.Accounting)
		}
		byUnit[as.Accounting] = append(byUnit[as.Accounting], as.Arm.Name)
	}
	var parts []string
	for _, u := range names {
		what := "whole N3 frames"
		if u == "packet" {
			what = "the user's IP packets"
		}
		parts = append(parts, fmt.Sprintf("%s (%s): classes count %s", u, strings.Join(byUnit[u], ", "), what))
	}
	if len(parts) == 0 {
		return ""
	}
	return "accounting " + strings.Join(parts, "; ") + "; GBR/MBR compliance is judged on the user's IP packets (the seed's rows counted N3 frames)"
}

// countedNote says what the classes counted when it is not the frame.
func countedNote(as ArmSummary) string {
	if as.Accounting != "packet" {
		return ""
	}
	return fmt.Sprintf(": they count %.1f-byte IP packets", as.Counted)
}

func verdict(pass, runs int) string {
	switch pass {
	case runs:
		return "pass"
	case 0:
		return "FAIL"
	}
	return "mixed"
}

func fmtEst(e Estimate) string {
	if e.N < 2 {
		return fmt.Sprintf("%.3f", e.Mean)
	}
	return fmt.Sprintf("%.3f ±%.3f", e.Mean, e.Half)
}
