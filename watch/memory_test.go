package watch

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestTuneGC runs in a child process per case (the GC target is the
// process's): without GOGC the daemon's target is set, and a full apply's
// release fits it to the (small) live heap; with GOGC the operator's
// target stays through both.
func TestTuneGC(t *testing.T) {
	if os.Getenv("GTPQOS_TUNEGC_CHILD") == "1" {
		got := TuneGC()
		now := debug.SetGCPercent(-1)
		debug.SetGCPercent(now)
		releaseMemory()
		after := debug.SetGCPercent(-1)
		fmt.Printf("TuneGC=%d in-force=%d after-release-above-25=%v after-release=%d\n", got, now, after > DaemonGCPercent, after)
		return
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, "TuneGC=25 in-force=25 after-release-above-25=true"},
		{[]string{"GOGC=150"}, "TuneGC=150 in-force=150 after-release-above-25=true after-release=150"},
		{[]string{"GOGC=off"}, "TuneGC=-1 in-force=-1 after-release-above-25=false after-release=-1"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTuneGC$")
		cmd.Env = append(withoutEnv(os.Environ(), "GOGC"), "GTPQOS_TUNEGC_CHILD=1")
		cmd.Env = append(cmd.Env, c.env...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("GOGC %v: %v\n%s\nwant %q", c.env, err, out, c.want)
		}
	}
}

// TestFitGCFollowsTheLiveHeap runs in a child process (the GC target is
// the process's): with TuneGC in force, fitGC moves the target as the live
// heap grows and shrinks, with no full apply and no forced release.
func TestFitGCFollowsTheLiveHeap(t *testing.T) {
	if os.Getenv("GTPQOS_FITGC_CHILD") == "1" {
		target := func() int {
			runtime.GC()
			fitGC()
			pct := debug.SetGCPercent(-1)
			debug.SetGCPercent(pct)
			return pct
		}
		TuneGC()
		small := target()
		held := make([]byte, 128<<20)
		for i := range held {
			held[i] = 1
		}
		big := target()
		runtime.KeepAlive(held)
		held = nil
		freed := target()
		fmt.Printf("small-above-100=%v at-128MB=%d freed-above-100=%v\n", small > 100, big, freed > 100)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFitGCFollowsTheLiveHeap$")
	cmd.Env = append(withoutEnv(os.Environ(), "GOGC"), "GTPQOS_FITGC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if want := fmt.Sprintf("small-above-100=true at-128MB=%d freed-above-100=true", DaemonGCPercent); err != nil || !strings.Contains(string(out), want) {
		t.Errorf("%v\n%s\nwant %q", err, out, want)
	}
}

// TestGCPercentFor: the heap may grow a quarter past what is live, or
// minGCHeadroom when that is more.
func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, DaemonGCPercent},
		{1 << 20, 1600},
		{16 << 20, 100},
		{64 << 20, 25},
		{100 << 20, 25},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

func withoutEnv(env []string, name string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}
