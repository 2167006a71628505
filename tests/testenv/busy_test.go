package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOthersBusyCountsOtherProcesses: the CPU a busy loop in another
// process takes in a second (its own /proc counters) shows in what
// OthersBusy counts for that second.
func TestOthersBusyCountsOtherProcesses(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	loop0, t0 := procCPU(t, cmd.Process.Pid), time.Now()
	others := OthersBusy()
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
