package watch

import (
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

// TestTuneGC runs in a child process per case (the GC target is the
// process's): without GOGC the daemon's target is set, with GOGC the
// operator's stays.
func TestTuneGC(t *testing.T) {
	if os.Getenv("GTPQOS_TUNEGC_CHILD") == "1" {
		got := TuneGC()
		now := debug.SetGCPercent(-1)
		t.Logf("TuneGC=%d in-force=%d", got, now)
		return
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, "TuneGC=25 in-force=25"},
		{[]string{"GOGC=150"}, "TuneGC=150 in-force=150"},
		{[]string{"GOGC=off"}, "TuneGC=-1 in-force=-1"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTuneGC$", "-test.v")
		cmd.Env = append(append(os.Environ(), "GTPQOS_TUNEGC_CHILD=1"), c.env...)
		if !hasEnv(c.env, "GOGC") {
			cmd.Env = withoutEnv(cmd.Env, "GOGC")
		}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("GOGC %v: %v\n%s\nwant %q", c.env, err, out, c.want)
		}
	}
}

func hasEnv(env []string, name string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, name+"=") {
			return true
		}
	}
	return false
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
