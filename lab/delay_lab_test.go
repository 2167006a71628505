package lab_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/lab/ab"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// TestLabDelayWithinBudget runs the seed's aware tree with A offered 10
// Mbit/s (within its GBR: it never queues, so its delay is the path's own:
// the stand-ins' forwarding on this host at its current load) and B and C
// offered 30 (B is held at its 6 Mbit/s MBR: its class drops) and checks
// B's one-way delay against its delay budget. B's leaf (ceil × budget
// bytes, at least a few frames) drains in `drain` at B's ceil, so B's
// median is at most drain + A's median and its p99 at most drain + A's
// worst (a stall of the stand-ins delays every flow's packets, but a
// flow's percentiles count them differently) + two of B's packets each.
// B's median must reach a quarter of drain: B did queue, so the bound is
// what held it. With HTB's built-in pfifo of txqueuelen (1,000) packets B
// waits about 1.6 s.
func TestLabDelayWithinBudget(t *testing.T) {
	testenv.SkipShort(t)
	l, target := labTarget(t, lab.Config{}, ab.LabOptions{Payload: lab.DefaultPayload, Generator: lab.TrafficBuiltin})
	ff, err := shaper.LoadFlowsFile("../examples/seed-aware.yaml")
	if err != nil {
		t.Fatal(err)
	}
	arm := ab.Arm{Name: "aware", Source: ff.Path, Flows: ff.Flows, Policy: ff.Policy,
		Offered: map[string]float64{"A": 10e6, "B": 30e6, "C": 30e6}}
	testenv.OnceMoreIfBusy(t, func() []string {
		failed, table := delayRun(t, l, target, arm)
		t.Logf("rate scale %g\n%s", l.Scale(), table)
		return failed
	})
}

// delayRun runs the arm once and returns what failed and the table.
func delayRun(t *testing.T, l *lab.Lab, target ab.Target, arm ab.Arm) ([]string, string) {
	t.Helper()
	res, err := ab.Run(context.Background(), target, ab.Options{Arms: []ab.Arm{arm}, Runs: 1, Duration: 8 * time.Second,
		WindowStart: 3 * time.Second, WindowEnd: 7 * time.Second, Tolerance: 0.05, Payload: lab.DefaultPayload})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := ab.WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	run := res.RunList[0]
	a, b := run.Flows[0], run.Flows[1]
	if a.Delay == nil || b.Delay == nil {
		t.Fatalf("no delay measured:\n%s", table.String())
	}
	s := l.Scale()
	bf := arm.Flows[1]
	ceil := uint64(float64(bf.MBR) * s)
	budget := arm.Policy.BudgetOf(bf.QFI)
	drain := float64(plan.QueueLimit(ceil, budget, plan.DefaultMaxFrame)) * 8 / float64(ceil) * 1e3 // ms
	packet := float64(lab.DefaultPayload+ab.InnerUDPOverhead) * 8 / float64(ceil) * 1e3
	var failed []string
	if bound := drain + a.Delay.P50 + 2*packet; b.Delay.P50 > bound {
		failed = append(failed, fmt.Sprintf("flow B median one-way delay %.1f ms above %.1f ms (leaf drain %.1f at %s for budget %v + path median %.2f (flow A) + 2 packets %.1f)",
			b.Delay.P50, bound, drain, shaper.FormatRate(ceil), budget, a.Delay.P50, 2*packet))
	}
	if bound := drain + a.Delay.Max + 2*packet; b.Delay.P99 > bound {
		failed = append(failed, fmt.Sprintf("flow B p99 one-way delay %.1f ms above %.1f ms (leaf drain %.1f + path max %.2f (flow A) + 2 packets %.1f)",
			b.Delay.P99, bound, drain, a.Delay.Max, 2*packet))
	}
	if b.Delay.P50 < drain/4 {
		failed = append(failed, fmt.Sprintf("flow B median delay %.2f ms below a quarter of its leaf's drain time %.1f ms: B did not queue", b.Delay.P50, drain))
	}
	if b.Drops == 0 {
		failed = append(failed, "flow B's class dropped nothing: offered 5 × its MBR, it was not held at its MBR")
	}
	return failed, table.String()
}
