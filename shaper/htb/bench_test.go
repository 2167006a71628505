package htb

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// scaleFlows returns n GBR flows (100 kbit/s guaranteed, 1 Mbit/s max)
// with qer ids and marks starting at first.
func scaleFlows(first, n int) []shaper.Flow {
	fl := make([]shaper.Flow, n)
	for i := range fl {
		id := uint32(first + i)
		fl[i] = shaper.Flow{ID: shaper.FlowID{SEID: uint64(id/4 + 1), QERID: id}, QFI: uint8(id % 64), Direction: shaper.Downlink,
			GBR: 100_000, MBR: mbit, Mark: 0x10000 + id}
	}
	return fl
}

func scalePolicy() plan.Policy { return plan.DefaultPolicy(10_000 * mbit) }

// rssMB returns the process's resident set size in MB.
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, ln := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(ln, "VmRSS:") {
			f := strings.Fields(ln)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// applyScale plans and reconciles flows against the reconciler's tree.
func applyScale(tb testing.TB, rec *Reconciler, flows []shaper.Flow, prev *plan.Tree) (*plan.Tree, Result) {
	pol := scalePolicy()
	tree := mustPlan(tb, flows, pol, prev)
	return tree, mustReconcile(tb, rec, tree)
}

func BenchmarkPlan10k(b *testing.B) {
	fl := scaleFlows(1, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		plan.Plan(fl, scalePolicy(), nil)
	}
}

func benchFromEmpty(b *testing.B, n int) {
	l := newLab(b)
	rec := l.rec(Options{})
	fl := scaleFlows(1, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		applyScale(b, rec, fl, nil)
		b.StopTimer()
		if err := rec.Reset(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(n), "flows")
	b.ReportMetric(rssMB(), "rss-MB")
}

// BenchmarkApplyFromEmpty1k plans and applies 1,000 flows on an empty device.
func BenchmarkApplyFromEmpty1k(b *testing.B) { benchFromEmpty(b, 1_000) }

// BenchmarkApplyFromEmpty10k plans and applies 10,000 flows on an empty
// device; rss-MB is the test process's RSS after it (plan + reconciler +
// the kernel dump buffers).
func BenchmarkApplyFromEmpty10k(b *testing.B) { benchFromEmpty(b, 10_000) }

// benchStep sets up 10k flows, then times one step from base to next and
// back (the way back is untimed).
func benchStep(b *testing.B, base, next []shaper.Flow, o Options) {
	l := newLab(b)
	rec := l.rec(o)
	prev, _ := applyScale(b, rec, base, nil)
	var writes, changes int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t2, res := applyScale(b, rec, next, prev)
		writes, changes = res.Writes, res.Changes()
		if res.Incremental != rec.opts.Incremental {
			b.Fatalf("step ran incremental=%v, want %v", res.Incremental, rec.opts.Incremental)
		}
		b.StopTimer()
		prev, _ = applyScale(b, rec, base, t2)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(writes), "writes")
	b.ReportMetric(float64(changes), "changes")
	b.ReportMetric(rssMB(), "rss-MB")
}

// BenchmarkAddOneAt10k adds one flow to 10,000.
func BenchmarkAddOneAt10k(b *testing.B) {
	base := scaleFlows(1, 10_000)
	benchStep(b, base, append(append([]shaper.Flow(nil), base...), scaleFlows(20_001, 1)...), Options{})
}

// BenchmarkRemoveOneAt10k removes one flow of 10,000.
func BenchmarkRemoveOneAt10k(b *testing.B) {
	base := scaleFlows(1, 10_000)
	benchStep(b, base, base[1:], Options{})
}

// BenchmarkChurn1PctAt10k removes 100 flows of 10,000 and adds 100 others.
func BenchmarkChurn1PctAt10k(b *testing.B) {
	base := scaleFlows(1, 10_000)
	next := append(append([]shaper.Flow(nil), base[100:]...), scaleFlows(20_001, 100)...)
	benchStep(b, base, next, Options{})
}

// The same steps with an incremental Reconciler (Options.Incremental, as
// gtpqos watch runs it): plan + diff against the last write, no read-back.

// BenchmarkAddOneAt10kIncremental adds one flow to 10,000.
func BenchmarkAddOneAt10kIncremental(b *testing.B) {
	base := scaleFlows(1, 10_000)
	benchStep(b, base, append(append([]shaper.Flow(nil), base...), scaleFlows(20_001, 1)...), Options{Incremental: true})
}

// BenchmarkRemoveOneAt10kIncremental removes one flow of 10,000.
func BenchmarkRemoveOneAt10kIncremental(b *testing.B) {
	base := scaleFlows(1, 10_000)
	benchStep(b, base, base[1:], Options{Incremental: true})
}

// BenchmarkChurn1PctAt10kIncremental removes 100 flows of 10,000 and adds
// 100 others.
func BenchmarkChurn1PctAt10kIncremental(b *testing.B) {
	base := scaleFlows(1, 10_000)
	next := append(append([]shaper.Flow(nil), base[100:]...), scaleFlows(20_001, 100)...)
	benchStep(b, base, next, Options{Incremental: true})
}

// BenchmarkReconcileInSync10kIncremental times an incremental Reconcile of
// an unchanged 10,000-flow tree (the reconciler's own cost, no plan, no
// writes).
func BenchmarkReconcileInSync10kIncremental(b *testing.B) {
	l := newLab(b)
	rec := l.rec(Options{Incremental: true})
	tree, _ := applyScale(b, rec, scaleFlows(1, 10_000), nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := mustReconcile(b, rec, tree); !res.Incremental || !res.InSync() {
			b.Fatalf("%s: want incremental, in sync", res.Summary())
		}
	}
}
