package main

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// killRuns is how many fresh builds TestIntegrationApplyKilledDuringBuild
// kills: 30, or 10 under -short (half of them near the instant the root
// appears, as in the full run).
func killRuns() int {
	if testing.Short() {
		return 10
	}
	return 30
}

// progID hides what changes from one build to the next in `tc filter
// show` (a BPF program's id and tag).
var progID = regexp.MustCompile(`\b(id|tag) [0-9a-f]+`)

// TestIntegrationApplyKilledDuringBuild kills the built `gtpqos apply`
// with SIGKILL at random instants of a fresh build of the seed's tree,
// killRuns() times. After every kill the device either has no gtpqos root,
// or a root with its link and default classes (the first step of a build
// is one netlink batch: root, link class, default class), never a root
// whose default class is missing (its packets would leave unshaped
// through HTB's direct queue); and a rerun converges to the tree of a
// clean run.
func TestIntegrationApplyKilledDuringBuild(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	ns := testenv.NewNetNS(t)
	ns.AddVethPair(t, "gqk0", "gqk1")
	// The test binary runs as gtpqos (see TestMain).
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gtpqos := func(args ...string) *exec.Cmd {
		cmd := exec.Command("ip", append([]string{"netns", "exec", ns.Name, bin}, args...)...)
		cmd.Env = append(os.Environ(), asCLIEnv+"=1")
		return cmd
	}
	apply := func() *exec.Cmd {
		return gtpqos("apply", "-f", examples+"seed-aware.yaml", "--dev", "gqk0")
	}
	state := func() string {
		return progID.ReplaceAllString(directPkts.ReplaceAllString(ns.Run(t, "tc", "qdisc", "show", "dev", "gqk0")+
			ns.Run(t, "tc", "class", "show", "dev", "gqk0")+ns.Run(t, "tc", "filter", "show", "dev", "gqk0"), ""), "$1 N")
	}
	reset := func() {
		if out, err := gtpqos("reset", "--dev", "gqk0").CombinedOutput(); err != nil {
			t.Fatalf("reset: %v\n%s", err, out)
		}
	}
	// A clean apply's time, the fastest of three.
	var took time.Duration
	var clean string
	for i := 0; i < 3; i++ {
		start := time.Now()
		if out, err := apply().CombinedOutput(); err != nil {
			t.Fatalf("clean apply: %v\n%s", err, out)
		}
		if d := time.Since(start); took == 0 || d < took {
			took = d
		}
		clean = state()
		reset()
	}
	// Every other kill lands near the instant the root appears (between
	// the latest kill that found none and the earliest that found one),
	// where a build that is not atomic would show a root without its
	// default class; the others anywhere in the build.
	lo, hi := time.Duration(0), took
	runs := killRuns()
	var withRoot, complete int
	for i := 0; i < runs; i++ {
		cmd := apply()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		at := time.Duration(rand.Int64N(int64(took)))
		if i%2 == 1 {
			// Start-up times vary: lo can pass hi.
			from, to := max(min(lo, hi)-2*time.Millisecond, 0), max(lo, hi)+2*time.Millisecond
			at = from + time.Duration(rand.Int64N(int64(to-from)))
		}
		time.Sleep(at)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		q, c := ns.Run(t, "tc", "qdisc", "show", "dev", "gqk0"), ns.Run(t, "tc", "class", "show", "dev", "gqk0")
		if strings.Contains(q, "qdisc htb 6771: root") {
			withRoot++
			hi = min(hi, at)
			if !strings.Contains(c, "class htb 6771:1 ") || !strings.Contains(c, "class htb 6771:2 ") {
				t.Errorf("kill %d after %v: root without its link or default class:\n%s%s", i, at, q, c)
			}
		}
		if cmd.ProcessState.Success() {
			complete++
		} else if !strings.Contains(q, "qdisc htb 6771: root") {
			lo = max(lo, at)
		}
		if out, err := apply().CombinedOutput(); err != nil {
			t.Fatalf("kill %d after %v: rerun: %v\n%s", i, at, err, out)
		}
		if got := state(); got != clean {
			t.Errorf("kill %d after %v: rerun left\n%s\nwant (clean run)\n%s", i, at, got, clean)
		}
		reset()
	}
	t.Logf("%d kills within %v (a clean apply's time): %d left a root, %d came after apply had finished; the root appeared between %v and %v",
		runs, took, withRoot, complete, lo, hi)
}
