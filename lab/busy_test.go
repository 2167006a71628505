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

// TestOthersBusyCountsOtherProcesses: the CPU a busy loop in another
// process takes in a second (its own /proc counters) shows in what
// othersBusy counts for that second.
func TestOthersBusyCountsOtherProcesses(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	loop0, t0 := procCPU(t, cmd.Process.Pid), time.Now()
	others := othersBusy()
	time.Sleep(time.Second)
	cores, _ := others()
	loop := (procCPU(t, cmd.Process.Pid) - loop0).Seconds() / time.Since(t0).Seconds()
	t.Logf("others' CPU: %.2f cores, of which a busy loop took %.2f", cores, loop)
	// On a saturated host the loop gets what the scheduler gives it, and
	// others' total stays where it was: judge by what the loop got.
	if loop < 0.2 {
		t.Skipf("the busy loop got %.2f cores: too little to tell it from the rest", loop)
	}
	if cores < loop-0.15 {
		t.Errorf("others' CPU: %.2f cores, but a busy loop alone took %.2f", cores, loop)
	}
}

// procCPU is process pid's user and system time (/proc/PID/stat).
func procCPU(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), ") ") // past the command, which may hold spaces
	f := strings.Fields(rest)
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}
