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
	"github.com/free5gc/gtpqos/tests/testenv"
)

// seedArms loads the seed's static and aware flows files, with the lab's
// rate-experiment budget (ab.RateBudget): these tests measure rates, and a
// leaf of the default 20 ms cannot cover the stand-ins' stalls on a loaded
// host (TestLabDelayWithinBudget tests the default).
func seedArms(t *testing.T) []ab.Arm {
	t.Helper()
	var arms []ab.Arm
	for _, name := range []string{"static", "aware"} {
		path := "../examples/seed-" + name + ".yaml"
		ff, err := shaper.LoadFlowsFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ff.Policy.DelayBudget = ab.RateBudget
		arms = append(arms, ab.Arm{Name: name, Source: path, Flows: ff.Flows, Policy: ff.Policy})
	}
	return arms
}

// TestLabSeedStaticVsAware reproduces the seed experiment in the lab with
// short runs (one 10 s run per arm, seconds 3-9) and asserts the seed
// experiment's acceptance checks: static shares equally (A misses its GBR,
// B exceeds its MBR), aware meets A's GBR and B's MBR, C gets the rest, the aggregate reaches
// 99% of the payload ceiling, and N3 frames are 1286 bytes. Rates follow
// GTPQOS_LAB_RATE_SCALE.
// labTarget builds a lab and an A/B target on its N3 device; both are
// removed when the test ends.
func labTarget(t *testing.T, cfg lab.Config, o ab.LabOptions) (*lab.Lab, *ab.LabTarget) {
	t.Helper()
	testenv.RequireRoot(t)
	l, err := lab.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close lab: %v", err)
		}
	})
	target, err := ab.NewLabTarget(l, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := target.Close(context.Background()); err != nil {
			t.Errorf("reset tree: %v", err)
		}
	})
	return l, target
}

func TestLabSeedStaticVsAware(t *testing.T) {
	testenv.SkipShort(t)
	l, target := labTarget(t, lab.Config{}, ab.LabOptions{Payload: lab.DefaultPayload, Generator: lab.TrafficBuiltin})
	testenv.OnceMoreIfBusy(t, func() []string { return seedRun(t, l, target) })
}

// seedRun runs the seed's two arms once and returns what failed.
func seedRun(t *testing.T, l *lab.Lab, target ab.Target) []string {
	t.Helper()
	res, err := ab.Run(context.Background(), target, ab.Options{
		Arms: seedArms(t), Runs: 1, Duration: 10 * time.Second,
		WindowStart: 3 * time.Second, WindowEnd: 9 * time.Second,
		Tolerance: 0.05, Payload: lab.DefaultPayload, Pause: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := ab.WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("rate scale %g\n%s", l.Scale(), table.String())
	checks := ab.SeedAcceptance(res)
	if len(checks) != 9 {
		t.Fatalf("%d acceptance checks, want 9", len(checks))
	}
	var failed []string
	for _, c := range checks {
		if !c.OK {
			failed = append(failed, fmt.Sprintf("%s: %s", c.Name, c.Detail))
		}
	}
	for _, r := range res.RunList {
		if r.Unclassified > 10 {
			failed = append(failed, fmt.Sprintf("arm %s: %d packets fell into the default class", r.Arm, r.Unclassified))
		}
	}
	if n := l.Unmatched(); n > 10 {
		failed = append(failed, fmt.Sprintf("%d N6 packets matched no PDR", n))
	}
	return failed
}

// TestLabTCPVariant runs the same contracts with one reverse TCP connection
// per flow (one 8 s run per arm) and checks that it runs and reports: every
// flow gets goodput, the bottleneck stays mostly busy (>= 75%: TCP in a busy 2-core lab), frames are TCP-sized
// and the table reports retransmits. Whether TCP meets the contracts is
// reported, not asserted (docs/lab.md states what it showed).
func TestLabTCPVariant(t *testing.T) {
	testenv.SkipShort(t)
	l, target := labTarget(t, lab.Config{}, ab.LabOptions{TCP: true, Generator: lab.TrafficBuiltin})
	ctx := context.Background()
	res, err := ab.Run(ctx, target, ab.Options{
		Arms: seedArms(t), Runs: 1, Duration: 8 * time.Second,
		WindowStart: 2 * time.Second, WindowEnd: 7 * time.Second, Tolerance: 0.05, TCP: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := ab.WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	if !strings.Contains(table.String(), "retrans") {
		t.Errorf("table does not report TCP retransmits")
	}
	for _, as := range res.Arms {
		if as.Frame <= 1286 || as.Frame > 1514 {
			t.Errorf("arm %s: N3 frame %.1f bytes, want TCP-sized (1287..1514)", as.Arm.Name, as.Frame)
		}
		if as.Utilisation < 0.75 {
			t.Errorf("arm %s: aggregate %.3f is %.1f%% of the ceiling, want >= 75%%", as.Arm.Name, as.Aggregate.Mean, 100*as.Utilisation)
		}
		for _, f := range as.Flows {
			if f.Goodput.Mean < 0.5*l.Scale() {
				t.Errorf("arm %s flow %s: goodput %.3f Mbit/s", as.Arm.Name, f.Name, f.Goodput.Mean)
			}
		}
	}
}

// TestLabTwoUEsSameQFI checks that two sessions whose flows both use QFI 2
// under different contracts are only configuration: a PDR table and a
// flows file. With marks (patched gtp5g) the mark classifier separates
// them; without (stock gtp5g) the (TEID, QFI) BPF classifier does.
func TestLabTwoUEsSameQFI(t *testing.T) {
	testenv.SkipShort(t)
	testenv.RequireRoot(t)
	pdrs, err := lab.LoadPDRs("testdata/two-ue-pdrs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ff, err := shaper.LoadFlowsFile("testdata/two-ue-aware.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ff.Policy.DelayBudget = ab.RateBudget // a rate test, as seedArms
	arm := ab.Arm{Name: "aware", Source: ff.Path, Flows: ff.Flows, Policy: ff.Policy}
	for _, noMarks := range []bool{false, true} {
		l, err := lab.New(lab.Config{PDRs: pdrs, NoMarks: noMarks})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		target, err := ab.NewLabTarget(l, ab.LabOptions{Payload: lab.DefaultPayload, Generator: lab.TrafficBuiltin, NoMarks: noMarks})
		if err != nil {
			t.Fatal(err)
		}
		res, err := ab.Run(ctx, target, ab.Options{Arms: []ab.Arm{arm}, Runs: 1, Duration: 10 * time.Second,
			WindowStart: 3 * time.Second, WindowEnd: 9 * time.Second, Tolerance: 0.05, Payload: lab.DefaultPayload})
		if err != nil {
			t.Fatal(err)
		}
		var table strings.Builder
		_ = ab.WriteTable(&table, res)
		t.Logf("noMarks=%v, notes %v\n%s", noMarks, res.RunList[0].Notes, table.String())
		s := l.Scale()
		ue1, ue2 := res.Arms[0].Flows[0], res.Arms[0].Flows[1]
		if g := ue1.IP.Mean; g < 0.95*20*s || g > 25*s {
			t.Errorf("noMarks=%v: UE1 (GBR 20, MBR 25) got %.3f Mbit/s", noMarks, g)
		}
		// Packet accounting: the cap is 4 Mbit/s of IP packets (1228 bytes
		// for a 1200-byte payload).
		if g := ue2.IP.Mean; g < 0.95*2*s || g > 4*s*1.01 {
			t.Errorf("noMarks=%v: UE2 (GBR 2, MBR 4) got %.3f Mbit/s of IP packets, want at most its 4 Mbit/s MBR (+1%%)", noMarks, g)
		}
		if u := res.RunList[0].Unclassified; u > 10 {
			t.Errorf("noMarks=%v: %d packets unclassified", noMarks, u)
		}
		if err := target.Close(ctx); err != nil {
			t.Errorf("reset: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("close lab: %v", err)
		}
	}
}
