package testenv

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostBusy reports the 1-minute load average and whether it is above the
// number of cores (other work competed with the lab's senders).
func hostBusy() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	var load float64
	if _, err := fmt.Sscanf(string(b), "%f", &load); err != nil {
		return 0, false
	}
	return load, load > float64(runtime.NumCPU())
}

// OthersBusy samples the CPU time of the whole host and of this process
// (whose goroutines are the lab's senders and receivers); the function it
// returns tells how many cores' worth the rest of the host used since, and
// whether that is more than half a core: work that competed with the
// senders during the run, which a load average read after it can miss.
func OthersBusy() func() (float64, bool) {
	host0, self0, t0 := hostCPU(), selfCPU(), time.Now()
	return func() (float64, bool) {
		cores := ((hostCPU() - host0) - (selfCPU() - self0)).Seconds() / time.Since(t0).Seconds()
		return cores, cores > 0.5
	}
}

// hostCPU is the busy time of every core since boot (/proc/stat's cpu
// line less idle and iowait), 0 if unreadable.
func hostCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy uint64
	for i := 1; i < len(f) && i <= 8; i++ {
		if i == 4 || i == 5 { // idle, iowait
			continue
		}
		v, _ := strconv.ParseUint(f[i], 10, 64)
		busy += v
	}
	return time.Duration(busy) * time.Second / clockTicks
}

// selfCPU is this process's user and system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTicks is USER_HZ, the unit of /proc/stat (100 on Linux).
const clockTicks = 100

// BusyNote says why a failed run is run once more, or "" when the host
// was not busy: the load average after it, or the CPU other processes
// used during it.
func BusyNote(others func() (float64, bool)) string {
	if load, busy := hostBusy(); busy {
		return fmt.Sprintf("load average %.1f on %d cores", load, runtime.NumCPU())
	}
	if cores, busy := others(); busy {
		return fmt.Sprintf("other processes used %.2f cores during the run", cores)
	}
	return ""
}

// OnceMoreIfBusy runs run, which returns the checks it failed. The
// contract is not loosened for a loaded host: a run that missed it while
// the host had more runnable tasks than cores, or while other processes
// took more than half a core (BusyNote), is run once more, and that run
// decides. Each check the deciding run failed is reported with tb.Error.
func OnceMoreIfBusy(tb testing.TB, run func() []string) {
	tb.Helper()
	others := OthersBusy()
	failed := run()
	if note := BusyNote(others); len(failed) > 0 && note != "" {
		tb.Logf("%d checks failed with %s (%s): running once more", len(failed), note, failed[0])
		failed = run()
	}
	for _, f := range failed {
		tb.Error(f)
	}
}
