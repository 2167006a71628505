package faults

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// concurrentRounds bounds the concurrency tests: 10 rounds, or 4 under
// -short (still two that start the second once the first holds the lock,
// and both kinds of round: a fresh build and an update).
func concurrentRounds() int {
	if testing.Short() {
		return 4
	}
	return 10
}

// Two `gtpqos apply` runs on one device at once, a big file and the seed
// file, the second started at a random point of the first: they never both
// write. Either one is refused (exit 1, one line naming the other's pid and
// command) and the tree is exactly the other's, or they ran one after the
// other and the tree is exactly one file's: never a mix.
func TestFaultConcurrentApplies(t *testing.T) {
	e := newEnv(t)
	big := e.file("big.yaml", buildFlows(nFlows))
	small := e.file("small.yaml", []flow{{seid: 1, qer: 1, mark: 2, gbr: "15mbit", mbr: "18mbit"},
		{seid: 1, qer: 2, mark: 3, gbr: "5mbit", mbr: "6mbit"}, {seid: 1, qer: 3, mark: 4, mbr: "30mbit"}})
	canon := map[string]string{"big": e.cleanCanonical("", big), "small": e.cleanCanonical("", small)}
	window := e.timed("", big)
	refused, rounds := 0, concurrentRounds()
	for i := 0; i < rounds; i++ {
		e.reset()
		if i%2 == 1 {
			e.apply(small) // half the rounds update an existing tree
		}
		a := e.start(e.applyArgs(big)...)
		// A random point of the first's measured run; every third round
		// right after the first took the lock, so that rounds overlap on a
		// host whose load makes the measured run no guide to this one.
		d := e.jitter(window)
		if i%3 == 0 {
			d = e.untilLocked(window + 10*time.Second)
		} else {
			time.Sleep(d)
		}
		b := e.start(e.applyArgs(small)...)
		rcA, rcB := a.wait(), b.wait()
		got := e.canonical()
		switch {
		case rcA == 0 && rcB == 0:
			if got != canon["big"] && got != canon["small"] {
				t.Fatalf("round %d (second start at %s): both applies exited 0 and the tree is neither file's:\n%s", i, d, got)
			}
		case rcA == 0:
			refused++
			loser(t, b, a, "big's")
			if got != canon["big"] {
				t.Fatalf("round %d: the refused apply changed the tree:\n%s\nwant big's:\n%s", i, got, canon["big"])
			}
		case rcB == 0:
			refused++
			loser(t, a, b, "small's")
			if got != canon["small"] {
				t.Fatalf("round %d: the refused apply changed the tree:\n%s\nwant small's:\n%s", i, got, canon["small"])
			}
		default:
			t.Fatalf("round %d: both applies failed:\n%s\n%s", i, a.stderr.String(), b.stderr.String())
		}
	}
	t.Logf("%d of %d rounds refused one apply", refused, rounds)
	if refused == 0 {
		t.Errorf("no round overlapped in %d: the second apply never met the first", rounds)
	}
}

// loser checks the refused run's one line: it names the winner's command
// and pid.
func loser(t *testing.T, lost, won *run, what string) {
	t.Helper()
	msg := lost.stderr.String()
	want := "being changed by another gtpqos apply (pid " + strconv.Itoa(won.cmd.Process.Pid) + ","
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, want) || lost.stdout.Len() != 0 {
		t.Errorf("refused apply (the other wrote %s tree): stdout %q, stderr %q; want one line containing %q", what, lost.stdout.String(), msg, want)
	}
}

// While the watch-equivalent writer holds the device, `gtpqos apply` and
// `gtpqos reset` are refused in one line naming the watch and its pid and
// change nothing; once it is gone, apply works.
func TestFaultWritersRefusedWhileWatchHolds(t *testing.T) {
	e := newEnv(t)
	build := e.file("build.yaml", buildFlows(nFlows))
	update := e.file("update.yaml", updateFlows(nFlows))
	e.apply(build)
	w := e.startWriter(update, build, update, build, update, build, update)
	held := false
	for i := 0; i < 500 && !held; i++ { // until the writer holds the lock
		ms, _ := filepath.Glob(filepath.Join(e.locks, e.dev+"*.lock"))
		for _, m := range ms {
			b, _ := os.ReadFile(m)
			held = held || strings.Contains(string(b), "command=watch")
		}
		time.Sleep(time.Millisecond)
	}
	if !held {
		t.Fatalf("the writer never took the lock: %s", w.stderr.String())
	}
	want := "already managed by another gtpqos watch (pid " + strconv.Itoa(w.cmd.Process.Pid) + ","
	for _, args := range [][]string{e.applyArgs(build), {"reset", "--dev", e.dev, "--lock-dir", e.locks}} {
		r := e.start(args...)
		rc := r.wait()
		if w.cmd.ProcessState != nil {
			t.Skip("the writer finished before the refusal could be checked (machine too slow for this round)")
		}
		msg := r.stderr.String()
		if rc != 1 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, want) {
			t.Errorf("%s during the watch: rc %d, stderr %q; want 1 and one line containing %q", args[0], rc, msg, want)
		}
	}
	if rc := w.wait(); rc != 0 {
		t.Fatalf("the writer failed: %s", w.stderr.String())
	}
	e.apply(build)
}
