package edt

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkRunColdFlows measures the program's cost per packet with a
// million flows and sessions in the maps: "random" sends each packet to
// another of them, in random order, so its flow's and session's entries
// are rarely in the cache (what a UPF with a million active sessions
// pays); "one-flow" sends every packet to one flow, the same path hot.
// Each packet is its own BPF_PROG_TEST_RUN (repeat 1), so both include the
// kernel's per-run timing overhead; ns/pkt is the kernel's own timing of
// the runs, not the syscalls'.
//
//	go test -run '^$' -bench RunColdFlows -benchtime 5x ./shaper/edt/
func BenchmarkRunColdFlows(b *testing.B) {
	p := loadForTest(b, LoadOptions{Overhead: testOverhead})
	const n = DefaultSessions - 10
	fill(b, p, n)
	const hot = 1 << 23 // above fill's ids
	if err := p.AddFlow(hot, FlowSpec{Marks: []uint32{hot}, MBR: 100e9, DelayBudget: time.Hour, Class: classNonGBR}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		mark func() uint32
	}{
		{"random", func() uint32 { return uint32(rng.IntN(n) + 1) }},
		{"one-flow", func() uint32 { return hot }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const perRound = 50_000
			data := frame(1000)
			var total time.Duration
			for range b.N {
				for range perRound {
					mark := tc.mark()
					ret, d, err := kernelTimed(p, data, newCtx(mark, 0), 1)
					if err != nil {
						b.Fatal(err)
					}
					if ret != actOK {
						b.Fatalf("mark %d: verdict %d", mark, ret)
					}
					total += d
				}
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*perRound), "ns/pkt")
		})
	}
}
