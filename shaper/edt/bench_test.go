package edt

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchOptions sizes the maps for a million sessions (the defaults), as a
// UPF would load them, whatever the fill.
func benchOptions(prealloc bool) LoadOptions {
	return LoadOptions{Overhead: testOverhead, Preallocate: prealloc}
}

// fill writes n sessions, each with one non-GBR flow (id = session id) and
// one mark, with batch updates.
func fill(b *testing.B, p *Pacer, n int) {
	b.Helper()
	ss := make([]Session, n)
	fs := make([]Flow, n)
	for i := range n {
		id := uint32(i + 1)
		ss[i] = Session{ID: id, AMBR: 100_000_000}
		fs[i] = Flow{ID: id, Spec: FlowSpec{Marks: []uint32{id}, Session: id, MBR: 50_000_000, DelayBudget: 100 * time.Millisecond, Class: classNonGBR}}
	}
	if err := p.AddSessions(ss); err != nil {
		b.Fatal(err)
	}
	if err := p.AddFlows(fs); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSessionChurn measures adding and removing one session (session,
// one flow with one mark: 3 map writes, then 2 mark/flow deletes after a
// lookup and 1 session delete) with n sessions already in maps sized for a
// million, and reports the median and 99th percentile of one add+remove.
//
//	go test -run '^$' -bench SessionChurn -benchtime 2000x ./shaper/edt/
func BenchmarkSessionChurn(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			p := loadForTest(b, benchOptions(false))
			fill(b, p, min(n, DefaultSessions-1)) // room for the churned one
			const id = 1 << 30
			spec := FlowSpec{Marks: []uint32{0xfffffe}, Session: id, MBR: 1e6, DelayBudget: time.Second}
			lat := make([]time.Duration, 0, b.N)
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := p.AddSession(id, 1e6); err != nil {
					b.Fatal(err)
				}
				if err := p.AddFlow(id, spec); err != nil {
					b.Fatal(err)
				}
				if err := p.RemoveFlow(id, spec.Marks...); err != nil {
					b.Fatal(err)
				}
				if err := p.RemoveSession(id); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// BenchmarkBuild measures writing a million sessions, each with one flow
// and one mark, into empty maps: with batch updates (64k entries a
// syscall) and one update at a time; and reports the maps' kernel memory
// (fdinfo memlock) once full, preallocated or not.
//
//	go test -run '^$' -bench Build -benchtime 1x ./shaper/edt/
func BenchmarkBuild(b *testing.B) {
	const n = 1_000_000
	for _, tc := range []struct {
		name     string
		prealloc bool
		batch    bool
	}{{"batch", false, true}, {"batch-prealloc", true, true}, {"single", false, false}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				p := loadForTest(b, benchOptions(tc.prealloc))
				empty := memTotal(b, p)
				b.StartTimer()
				t0, cpu0 := time.Now(), cpuTime(b)
				if tc.batch {
					fill(b, p, n)
				} else {
					for i := range n {
						id := uint32(i + 1)
						if err := p.AddSession(id, 1e8); err != nil {
							b.Fatal(err)
						}
						if err := p.AddFlow(id, FlowSpec{Marks: []uint32{id}, Session: id, MBR: 5e7, DelayBudget: 100 * time.Millisecond}); err != nil {
							b.Fatal(err)
						}
					}
				}
				d, cpu := time.Since(t0), cpuTime(b)-cpu0
				b.StopTimer()
				b.ReportMetric(d.Seconds(), "s/1M-sessions")
				b.ReportMetric(cpu.Seconds(), "cpu-s/1M-sessions")
				b.ReportMetric(float64(empty)/(1<<20), "MiB-empty")
				b.ReportMetric(float64(memTotal(b, p))/(1<<20), "MiB-full")
				p.Close()
				b.StartTimer()
			}
		})
	}
}

func memTotal(b *testing.B, p *Pacer) uint64 {
	b.Helper()
	m, err := p.MapMemory()
	if err != nil {
		b.Fatal(err)
	}
	var t uint64
	for _, v := range m {
		t += v
	}
	return t
}

// BenchmarkRun measures the program's cost per packet with
// BPF_PROG_TEST_RUN repeating it in the kernel: ns/pkt is the kernel's own
// mean (preemption left out), wall-ns/pkt the syscall's wall time over the
// runs. For each path.
// A million sessions (less 10) sit in the maps; the packet's keys stay cache-hot.
//
//	go test -run '^$' -bench Run -benchtime 20x ./shaper/edt/
func BenchmarkRun(b *testing.B) {
	p := loadForTest(b, LoadOptions{Overhead: testOverhead, echo: false})
	fill(b, p, DefaultSessions-10) // room for the cases' own sessions
	const base = 1 << 23           // marks and ids above fill's
	for id, s := range map[uint32]FlowSpec{
		base + 1: {Marks: []uint32{base + 1}, MBR: 100e9, DelayBudget: time.Hour, Class: classNonGBR},
		base + 2: {Marks: []uint32{base + 2}, Session: base + 2, MBR: 100e9, DelayBudget: time.Hour, Class: classNonGBR},
		base + 3: {Marks: []uint32{base + 3}, GBR: 50e9, MBR: 100e9, DelayBudget: time.Hour, Class: classNonGBR, GBRClass: classGBR},
		base + 4: {Marks: []uint32{base + 4}, MBR: 1000, DelayBudget: time.Millisecond, Class: classNonGBR},
	} {
		if s.Session != 0 {
			if err := p.AddSession(s.Session, 100e9); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.AddFlow(id, s); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.SetDefaultClass(classDefault); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		mark    uint32
		verdict uint32
	}{
		{"unknown-mark", 0x7fffff, actOK},
		{"flow-mbr", base + 1, actOK},
		{"flow-in-session", base + 2, actOK},
		{"gbr-flow", base + 3, actOK},
		{"horizon-drop", base + 4, actShot},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const repeat = 200_000
			data, in := frame(1000), newCtx(tc.mark, 0)
			var total, wall time.Duration
			for range b.N {
				t0 := time.Now()
				ret, d, err := kernelTimed(p, data, in, repeat)
				wall += time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				if ret != tc.verdict {
					b.Fatalf("verdict %d, want %d", ret, tc.verdict)
				}
				total += d
			}
			b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N*repeat), "wall-ns/pkt")
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}

// cpuTime is the process's user + system CPU time: on a loaded host a
// better measure of a map write's cost than the wall clock.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
