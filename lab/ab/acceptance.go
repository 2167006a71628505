package ab

import (
	"fmt"
	"math"
	"strings"
)

// Check is one acceptance criterion and its verdict.
type Check struct {
	// Name states the criterion.
	Name string `json:"name"`
	// OK is the verdict; Detail shows the numbers.
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// userRate is a flow's rate in its contract's unit: the user's IP packets
// where they were measured, else the payload.
func userRate(f FlowSummary) float64 {
	if f.IP.Mean > 0 {
		return f.IP.Mean
	}
	return f.Goodput.Mean
}

// SeedAcceptance evaluates the seed experiment's acceptance criteria on
// results that have a static and an aware arm with flows A, B and C,
// judging contracts on the user's IP packets (what a QER's GBR and MBR
// count):
//
//   - static: every flow within ±3% of an equal share; A fails its GBR
//     (below 95%); B exceeds its MBR (above 105%);
//   - aware: A between 95% of its GBR and 105% of its MBR; B within 1% of its
//     MBR; C gets the rest (at least 97% of the payload ceiling minus A
//     and B); the aggregate at least 99% of the payload ceiling;
//   - the classes count what the accounting says: payload + 28 bytes (the
//     user's IP packets) under packet accounting, payload + 86 (N3 frames,
//     1286 for 1200-byte payloads) under frame accounting.
//
// With arms under more than one backend, each backend's arms are judged
// on their own and each check's name starts with the backend's.
// It returns nil when the results do not have the seed's shape.
func SeedAcceptance(res *Results) []Check {
	groups := byBackend(res.Arms)
	if len(groups) < 2 {
		return seedAcceptance(res)
	}
	var cs []Check
	for _, g := range groups {
		sub := *res
		sub.Arms = g
		for _, c := range seedAcceptance(&sub) {
			c.Name = armBackend(g[0].Arm) + ": " + c.Name
			cs = append(cs, c)
		}
	}
	return cs
}

// byBackend splits the arms by backend, in the order the backends first
// appear.
func byBackend(arms []ArmSummary) [][]ArmSummary {
	var out [][]ArmSummary
	at := map[string]int{}
	for _, as := range arms {
		n := armBackend(as.Arm)
		i, ok := at[n]
		if !ok {
			i, at[n] = len(out), len(out)
			out = append(out, nil)
		}
		out[i] = append(out[i], as)
	}
	return out
}

func seedAcceptance(res *Results) []Check {
	static, aware := seedSummaries(res)
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
		add("static: flow A fails its GBR", userRate(a) < 0.95*a.GBR, "A %.3f < 0.95 × %g (user packets)", userRate(a), round3(a.GBR))
		add("static: flow B exceeds its MBR", userRate(b) > 1.05*b.MBR, "B %.3f > 1.05 × %g (user packets)", userRate(b), round3(b.MBR))
	}
	if aware != nil {
		a, b, c := aware.Flows[0], aware.Flows[1], aware.Flows[2]
		add("aware: flow A >= 0.95 × GBR and <= 1.05 × MBR", userRate(a) >= 0.95*a.GBR && userRate(a) <= 1.05*a.MBR,
			"0.95 × %g <= A %.3f <= 1.05 × %g (user packets)", round3(a.GBR), userRate(a), round3(a.MBR))
		add("aware: flow B within 1% of its MBR", math.Abs(userRate(b)/b.MBR-1) <= 0.01,
			"B %.3f = %g ± 1%% (user packets)", userRate(b), round3(b.MBR))
		rest := aware.Ceiling - a.Goodput.Mean - b.Goodput.Mean
		add("aware: flow C gets the rest", c.Goodput.Mean >= 0.97*rest, "C %.3f of the %.3f left by A and B", c.Goodput.Mean, rest)
		add("aware: aggregate >= 99% of the payload ceiling", aware.Utilisation >= 0.99,
			"%.3f of %.3f = %.2f%%", aware.Aggregate.Mean, aware.Ceiling, 100*aware.Utilisation)
	}
	if res.Payload > 0 {
		for _, as := range []*ArmSummary{static, aware} {
			if as != nil {
				cs = append(cs, countedCheck(res.Payload, as))
			}
		}
	}
	return cs
}

// seedSummaries returns the static and aware arms with the seed's flows:
// the last arm named after its mode ("aware", or "aware/edt" side by side),
// else the last of that mode, so an extra arm that also carries flows A, B
// and C (a BESS or GBR case) is not judged by the seed's criteria.
func seedSummaries(res *Results) (static, aware *ArmSummary) {
	var named [2]*ArmSummary
	for i := range res.Arms {
		as := &res.Arms[i]
		if !isSeedLayout(*as) || as.Runs == 0 {
			continue
		}
		byName := strings.SplitN(as.Arm.Name, "/", 2)[0] == as.Mode
		switch as.Mode {
		case "static":
			static = as
			if byName {
				named[0] = as
			}
		case "aware":
			aware = as
			if byName {
				named[1] = as
			}
		}
	}
	if named[0] != nil {
		static = named[0]
	}
	if named[1] != nil {
		aware = named[1]
	}
	return static, aware
}

// countedCheck checks the bytes per packet the arm's classes counted.
func countedCheck(payload int, as *ArmSummary) Check {
	want, what := float64(payload+GTPUOverhead), "N3 frames"
	if as.Accounting == "packet" {
		want, what = float64(payload+InnerUDPOverhead), "the user's IP packets"
	}
	return Check{Name: fmt.Sprintf("%s: classes count %s (%.0f bytes)", as.Arm.Name, what, want), OK: math.Abs(as.Counted-want) < 0.5,
		Detail: fmt.Sprintf("measured %.2f bytes/packet (accounting %s; N3 frame %.2f)", as.Counted, as.Accounting, as.Frame)}
}
