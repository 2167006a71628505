package watch

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The daemon's memory settings. Its live heap is mostly its tables (about
// 1 KB per flow), and Go's default collector target lets the heap reach
// twice that before a collection: at 65k flows some 60 MB of garbage held
// resident. The daemon instead lets the heap grow past what is live by a
// quarter, or by minGCHeadroom when that is more: large trees keep little
// garbage, while a small one is not collected every few hundred events
// (each collection slows the events that meet it). Events allocate little,
// so the extra collections at 65k flows cost CPU in a start or a resync
// only.
const (
	// DaemonGCPercent is the least collector target (Go's GOGC) the daemon
	// runs with.
	DaemonGCPercent = 25
	// minGCHeadroom is the least the heap may grow between collections.
	minGCHeadroom = 16 << 20
)

// gcPercent is the target TuneGC or the last fit set; 0 when GOGC in the
// environment chose it, which applies then leave alone.
var gcPercent atomic.Int64

// TuneGC sets the daemon's garbage-collector target (DaemonGCPercent, then
// gcPercentFor the live heap after each successful apply) unless the GOGC
// environment variable sets one, and returns the target in force (-1: off,
// by GOGC=off). Start calls it.
func TuneGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		gcPercent.Store(0)
		pct := debug.SetGCPercent(100) // read it back: SetGCPercent returns the old value
		debug.SetGCPercent(pct)
		return pct
	}
	gcPercent.Store(DaemonGCPercent)
	debug.SetGCPercent(DaemonGCPercent)
	return DaemonGCPercent
}

// gcPercentFor is the target that lets a heap of live bytes grow by a
// quarter, or by minGCHeadroom when that is more.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return DaemonGCPercent
	}
	return max(DaemonGCPercent, int(minGCHeadroom*100/live))
}

// releaseMemory collects, hands the free pages back to the OS and fits
// the target to the heap now live.
func releaseMemory() {
	debug.FreeOSMemory()
	fitGC()
}

// fitGC fits the collector's target to the live heap the last collection
// measured, when TuneGC set it and the fit moved by more than an eighth.
// The engine calls it after every successful apply, not only full ones:
// a daemon that started with few sessions and took 65k by events would
// otherwise keep a target made for a heap a hundredth the size (the heap
// allowed to grow several times over), and one whose sessions ended would
// keep collecting every few hundred events. Reading the live heap is
// cheap and starts no collection.
func fitGC() {
	old := gcPercent.Load()
	if old == 0 {
		return
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	want := int64(gcPercentFor(s[0].Value.Uint64()))
	if (want-old)*8 <= old && (old-want)*8 <= old {
		return
	}
	gcPercent.Store(want)
	debug.SetGCPercent(int(want))
}
