package ab

import (
	"fmt"
	"math"
)

// Check is one acceptance criterion and its verdict.
type Check struct {
	// Name states the criterion.
	Name string `json:"name"`
	// OK is the verdict; Detail shows the numbers.
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// SeedAcceptance evaluates the seed experiment's acceptance criteria on
// results that have a static and an aware arm with flows A, B and C:
//
//   - static: every flow within ±3% of an equal share; A fails its GBR
//     (below 95%); B exceeds its MBR (above 105%);
//   - aware: A at least 95% of GBR and at most MBR; B at most 105% of MBR;
//     C gets the rest (at least 97% of the ceiling minus A and B); the
//     aggregate at least 99% of the payload ceiling;
//   - the N3 frame is payload + 86 bytes (1286 for 1200-byte payloads).
//
// It returns nil when the results do not have the seed's shape.
func SeedAcceptance(res *Results) []Check {
	var static, aware *ArmSummary
	for i := range res.Arms {
		as := &res.Arms[i]
		if !isSeedLayout(*as) || as.Runs == 0 {
			continue
		}
		switch as.Mode {
		case "static":
			static = as
		case "aware":
			aware = as
		}
	}
	var cs []Check
	add := func(name string, ok bool, format string, a ...any) {
		cs = append(cs, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...)})
	}
	if static != nil {
		ok := true
		det := ""
		for _, f := range static.Flows {
			if math.Abs(f.Share-1) > 0.03 {
				ok = false
			}
			det += fmt.Sprintf("%s %.3f (%+.2f%%) ", f.Name, f.Goodput.Mean, 100*(f.Share-1))
		}
		add("static: each flow within ±3% of an equal share", ok, "%sof %.3f/3", det, static.Aggregate.Mean)
		a, b := static.Flows[0], static.Flows[1]
		add("static: flow A fails its GBR", a.Goodput.Mean < 0.95*a.GBR, "A %.3f < 0.95 × %g", a.Goodput.Mean, round3(a.GBR))
		add("static: flow B exceeds its MBR", b.Goodput.Mean > 1.05*b.MBR, "B %.3f > 1.05 × %g", b.Goodput.Mean, round3(b.MBR))
	}
	if aware != nil {
		a, b, c := aware.Flows[0], aware.Flows[1], aware.Flows[2]
		add("aware: flow A >= 0.95 × GBR and <= MBR", a.Goodput.Mean >= 0.95*a.GBR && a.Goodput.Mean <= a.MBR,
			"0.95 × %g <= A %.3f <= %g", round3(a.GBR), a.Goodput.Mean, round3(a.MBR))
		add("aware: flow B payload <= 1.05 × MBR", b.Goodput.Mean <= 1.05*b.MBR, "B %.3f <= 1.05 × %g", b.Goodput.Mean, round3(b.MBR))
		rest := aware.Ceiling - a.Goodput.Mean - b.Goodput.Mean
		add("aware: flow C gets the rest", c.Goodput.Mean >= 0.97*rest, "C %.3f of the %.3f left by A and B", c.Goodput.Mean, rest)
		add("aware: aggregate >= 99% of the payload ceiling", aware.Utilisation >= 0.99,
			"%.3f of %.3f = %.2f%%", aware.Aggregate.Mean, aware.Ceiling, 100*aware.Utilisation)
	}
	if res.Payload > 0 {
		for _, as := range []*ArmSummary{static, aware} {
			if as != nil {
				want := float64(res.Payload + GTPUOverhead)
				add(fmt.Sprintf("%s: N3 frame = %d + %d bytes", as.Arm.Name, res.Payload, GTPUOverhead),
					math.Abs(as.Frame-want) < 0.5, "measured %.2f bytes/packet, want %.0f", as.Frame, want)
			}
		}
	}
	return cs
}
