package lab_test

import (
	"fmt"
	"os"
	"os/exec"
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

// othersBusy samples the CPU time of the whole host and of this process
// (whose goroutines are the lab's senders and receivers); the function it
// returns tells how many cores' worth the rest of the host used since, and
// whether that is more than half a core: work that competed with the
// senders during the run, which a load average read after it can miss.
func othersBusy() func() (float64, bool) {
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

// busyNote says why a failed run is run once more, or "" when the host
// was not busy: the load average after it, or the CPU other processes
// used during it.
func busyNote(others func() (float64, bool)) string {
	if load, busy := hostBusy(); busy {
		return fmt.Sprintf("load average %.1f on %d cores", load, runtime.NumCPU())
	}
	if cores, busy := others(); busy {
		return fmt.Sprintf("other processes used %.2f cores during the run", cores)
	}
	return ""
}

// TestOthersBusyCountsOtherProcesses: a busy loop in another process for a
// second shows as at least 0.3 cores more than the same second without it.
func TestOthersBusyCountsOtherProcesses(t *testing.T) {
	measure := func(busy bool) float64 {
		var cmd *exec.Cmd
		if busy {
			cmd = exec.Command("sh", "-c", "while :; do :; done")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
		}
		others := othersBusy()
		time.Sleep(time.Second)
		cores, _ := others()
		if cmd != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return cores
	}
	idle, loaded := measure(false), measure(true)
	t.Logf("others' CPU: %.2f cores idle, %.2f with a busy loop", idle, loaded)
	if loaded < idle+0.3 {
		t.Errorf("others' CPU: %.2f cores without a busy process, %.2f with one: want at least 0.3 more", idle, loaded)
	}
}
