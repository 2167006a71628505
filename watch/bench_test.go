package watch

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// appliedSignal wakes a waiter after every reconcile and keeps the last
// report.
type appliedSignal struct {
	recObserver
	ch chan struct{}
}

func (a *appliedSignal) Applied(dev string, rep shaper.Report, d time.Duration) {
	a.recObserver.Applied(dev, rep, d)
	select {
	case a.ch <- struct{}{}:
	default:
	}
}

// benchFlow is flow n of the benchmark: one non-GBR flow per session, so
// admission never refuses one.
func benchFlow(n uint64) shaper.Flow {
	f := flow(n, 1, uint8(n%63+1), 0, 2e6)
	f.Mark = uint32(n)
	return f
}

// benchEngine installs base flows on a real HTB in a netns through the
// engine and the HTB backend as the daemon opens it (incremental), and
// returns the running engine's pieces.
func benchEngine(b *testing.B, base int) (*htbLab, *scriptedSource, *htb.Backend, *appliedSignal) {
	l := newHTBLab(b, 100e9)
	l.pol.NonGBRMin = 1e6
	src := newScriptedSource()
	for n := uint64(1); n <= uint64(base); n++ {
		src.set(n, benchFlow(n))
	}
	be := l.backend(b, backends.Options{})
	sig := &appliedSignal{ch: make(chan struct{}, 1)}
	opt := l.options(src, be)
	opt.Resync, opt.Observer = time.Hour, sig
	startEngine(b, opt)
	start := time.Now()
	waitInstalled(b, sig, l.dev, benchFlow(uint64(base)).ID, 10*time.Minute)
	b.Logf("%d flows installed from empty in %v", base, time.Since(start).Round(time.Millisecond))
	return l, src, be, sig
}

// waitInstalled waits until dev's last reconcile has id's class.
func waitInstalled(b testing.TB, sig *appliedSignal, dev string, id shaper.FlowID, timeout time.Duration) {
	deadline := time.After(timeout)
	for {
		if rep, ok := sig.report(dev); ok {
			if _, ok := rep.FlowClass(id); ok {
				return
			}
		}
		select {
		case <-sig.ch:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			b.Fatalf("flow %s not installed after %v", id, timeout)
		}
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// BenchmarkWatch10k installs 10k flows on a real HTB in a netns through
// the engine (scripted source, the HTB backend opened as the daemon opens
// it: incremental, mark classifier),
// then measures:
//
//   - EventToClass: for single adds one at a time, the time from the
//     session-add event to its class being in the kernel (Apply returned);
//     reported as p50-ms and p99-ms over 50 adds, with the class-list
//     reads per event (0: incremental reconciles trust the last write);
//
//   - Burst1000: the time to converge after a burst of 1,000 events (500
//     new sessions and 500 rate changes, sent as fast as possible).
//
//     go test -run '^$' -bench Watch10k -benchtime 1x ./watch/
func BenchmarkWatch10k(b *testing.B) {
	const base = 10000
	l, src, be, sig := benchEngine(b, base)
	rec := be.Reconciler()
	next := uint64(base + 1)
	b.Run("EventToClass", func(b *testing.B) {
		const adds = 50
		var lat []time.Duration
		reads := rec.ClassListReads()
		for range b.N {
			for range adds {
				f := benchFlow(next)
				next++
				t0 := time.Now()
				src.change(f.ID.SEID, f)
				waitInstalled(b, sig, l.dev, f.ID, time.Minute)
				lat = append(lat, time.Since(t0))
			}
		}
		b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
		// Incremental: an event's reconcile trusts the last write and
		// reads no class list back (0 expected).
		b.ReportMetric(float64(rec.ClassListReads()-reads)/float64(adds*b.N), "class-list-reads/event")
	})
	b.Run("Burst1000", func(b *testing.B) {
		var total time.Duration
		for n := range b.N {
			t0 := time.Now()
			var last shaper.Flow
			mbr := uint64(3e6 + n*1e6)
			for i := range 500 {
				f := benchFlow(next)
				next++
				src.change(f.ID.SEID, f)
				u := benchFlow(uint64(i + 1))
				u.MBR = mbr
				src.change(u.ID.SEID, u)
				last = f
			}
			// Converged: every add is in and the rate changes with them.
			// An Update reports only the classes it wrote, so the
			// backend's plan (what its writes made true) is asked.
			want := len(downlinkOf(src.all()))
			deadline := time.Now().Add(5 * time.Minute)
			for {
				if burstDone(be.Classes(), want, last.ID, benchFlow(500).ID, mbr) {
					break
				}
				if time.Now().After(deadline) {
					b.Fatal("burst did not converge in 5 minutes")
				}
				select {
				case <-sig.ch:
				case <-time.After(50 * time.Millisecond):
				}
			}
			total += time.Since(t0)
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "converge-ms")
	})
}

// burstDone reports whether classes hold want flow classes, last's among
// them, and changed's class has ceil mbr.
func burstDone(classes []shaper.ClassState, want int, last, changed shaper.FlowID, mbr uint64) bool {
	n, haveLast, ceil := 0, false, uint64(0)
	for _, c := range classes {
		if c.Role != shaper.RoleFlow {
			continue
		}
		n++
		haveLast = haveLast || c.Flow == last
		if c.Flow == changed {
			ceil = c.Ceil
		}
	}
	return n == want && haveLast && ceil == mbr
}
