package watch

import (
	"os"
	"runtime/debug"
)

// DaemonGCPercent is the garbage collector's target the daemon runs with
// (Go's GOGC): the heap may grow a quarter past what is live before a
// collection, where Go's default lets it double. The daemon's live heap
// is mostly its tables (about 1 KB per flow), so at 65k flows the default
// would keep some 60 MB of garbage resident; events allocate little, so
// the extra collections cost CPU only while a start or a resync runs.
const DaemonGCPercent = 25

// TuneGC sets the daemon's garbage-collector target (DaemonGCPercent)
// unless the GOGC environment variable sets one, and returns the target in
// force (-1: off, by GOGC=off). Start calls it.
func TuneGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		pct := debug.SetGCPercent(100) // read it back: SetGCPercent returns the old value
		debug.SetGCPercent(pct)
		return pct
	}
	debug.SetGCPercent(DaemonGCPercent)
	return DaemonGCPercent
}
