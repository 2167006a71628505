package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// Kills and reruns per test: bounded counts, not durations.
const (
	killRounds = 12
	// nFlows makes a build long enough (about 0.1 s on the host) for
	// kills to land in its every step.
	nFlows = 400
)

// killWindow draws kill delays and records how many kills landed while
// the writer still ran. Its first width is the fastest of a few clean
// runs, timed before the rounds; when a kill lands after the run has
// ended, the width narrows by a third. A run timed while other packages'
// tests load the machine can take several times as long as the rounds
// after it, and a window that wide puts most kills after the run.
type killWindow struct {
	width         time.Duration
	inside, tries int
}

// draw returns the next kill delay, in [0, width].
func (w *killWindow) draw(e *env) time.Duration { return e.jitter(w.width) }

// landed counts one kill.
func (w *killWindow) landed(inside bool) {
	w.tries++
	if inside {
		w.inside++
		return
	}
	w.width = w.width * 2 / 3
}

func (w *killWindow) check(t *testing.T, what string) {
	t.Helper()
	t.Logf("%s: %d of %d kills landed inside the run (window now %s)", what, w.inside, w.tries, w.width)
	if w.inside < w.tries/4 {
		t.Errorf("%s: only %d of %d kills landed inside the run: the kill window is off", what, w.inside, w.tries)
	}
}

// `gtpqos apply` killed at a random point of a build from an empty
// device, then run again, converges to the tree of a clean run; the run
// after it writes nothing. Traffic flows throughout, and the device is
// sampled during and after each kill: the contract (creationJudge) is that
// no sample shows the root without its default class, and that no packet
// goes through the direct queue once the root has it.
func TestFaultKillApplyDuringBuild(t *testing.T) {
	testenv.SkipShortSlow(t, "kills a writer a dozen times at timed points")
	e := newEnv(t)
	flows := buildFlows(nFlows)
	build := e.file("build.yaml", flows)
	want := e.cleanCanonical("", build)
	w := &killWindow{width: e.timed("", build) * 12 / 10}
	stopTraffic := e.traffic(marksOf(flows)[:8])
	defer stopTraffic()
	var unshaped []string
	var instants, instantPkts uint64
	for i := 0; i < killRounds; i++ {
		e.reset()
		j := &creationJudge{}
		stopSampling := e.judgedSampler(j.judge)
		r := e.start(e.applyArgs(build)...)
		d := w.draw(e)
		time.Sleep(d)
		w.landed(r.kill())
		if v := j.judge(e.sample()); v != "" {
			unshaped = append(unshaped, "right after a kill at "+d.String()+": "+v)
		}
		e.apply(build)
		unshaped = append(unshaped, stopSampling()...)
		if j.instant > 0 {
			instants, instantPkts = instants+1, instantPkts+j.instant
		}
		if got := e.canonical(); got != want {
			t.Fatalf("round %d (kill at %s): the rerun's tree differs from a clean run's:\n%s\nclean:\n%s", i, d, got, want)
		}
		r2 := e.start(e.applyArgs(build)...)
		if rc := r2.wait(); rc != 0 || !strings.Contains(r2.stdout.String(), "in sync") {
			t.Fatalf("round %d: apply after the rerun: rc %d\n%s%s; want in sync", i, rc, r2.stdout.String(), r2.stderr.String())
		}
	}
	w.check(t, "build")
	t.Logf("%d of %d builds let packets through the direct queue in the instant of the root's creation (%d packets in all)",
		instants, killRounds, instantPkts)
	if len(unshaped) > 0 {
		t.Errorf("%d sampled moments broke the contract during builds, e.g. %s", len(unshaped), unshaped[0])
	}
}

// updateRound is one round on a device holding build's tree, made
// without traffic (a fresh build is the build test's): with traffic flowing
// and the device sampled, it starts a writer, kills it after a random delay
// drawn from w, samples right after, and runs rerun to completion. It
// returns the delay and every sampled moment that broke the contract.
func (e *env) updateRound(build string, marks []uint32, w *killWindow, start func() *run, rerun func()) (time.Duration, []string) {
	e.t.Helper()
	e.reset()
	e.apply(build)
	if v := e.sample().violation(); v != "" {
		e.t.Fatalf("after a clean build without traffic: %s", v)
	}
	stopTraffic := e.traffic(marks)
	stopSampling := e.sampler()
	r := start()
	d := w.draw(e)
	time.Sleep(d)
	w.landed(r.kill())
	after := e.sample().violation()
	rerun()
	unshaped := stopSampling()
	stopTraffic()
	if after != "" {
		unshaped = append(unshaped, "right after the kill: "+after)
	}
	return d, unshaped
}

// checkRound fails the test on a round that broke the contract or did not
// converge to want.
func (e *env) checkRound(i int, d time.Duration, unshaped []string, want string) {
	e.t.Helper()
	if len(unshaped) > 0 {
		e.t.Errorf("round %d (kill at %s): %d sampled moments broke the contract, e.g. %s", i, d, len(unshaped), unshaped[0])
	}
	if got := e.canonical(); got != want {
		e.t.Fatalf("round %d (kill at %s): the rerun's tree differs from a clean run's:\n%s\nclean:\n%s", i, d, got, want)
	}
}

// `gtpqos apply` killed at a random point of an update (flows leave,
// arrive, change rates, come under a session AMBR) on a device that holds
// a tree, then run again, converges to the tree a clean update makes; no
// sample, during the update, after the kill or during the rerun, shows the
// root without its default class or a packet in the direct queue.
func TestFaultKillApplyDuringUpdate(t *testing.T) {
	testenv.SkipShortSlow(t, "kills a writer a dozen times at timed points")
	e := newEnv(t)
	flows := buildFlows(nFlows)
	build := e.file("build.yaml", flows)
	update := e.file("update.yaml", updateFlows(nFlows))
	want := e.cleanCanonical(build, update)
	w := &killWindow{width: e.timed(build, update) * 12 / 10}
	for i := 0; i < killRounds; i++ {
		d, unshaped := e.updateRound(build, marksOf(flows)[:8], w,
			func() *run { return e.start(e.applyArgs(update)...) }, func() { e.apply(update) })
		e.checkRound(i, d, unshaped, want)
	}
	w.check(t, "update")
}

// The watch-equivalent writer (incremental, as the daemon reconciles each
// change) killed at a random point of a series of updates, then started
// again (its first Apply is a full run that reads the kernel, as after a
// daemon restart), converges to the tree a clean run makes; no sample
// breaks the contract.
func TestFaultKillWatchWriter(t *testing.T) {
	testenv.SkipShortSlow(t, "kills a writer a dozen times at timed points")
	e := newEnv(t)
	flows := buildFlows(nFlows)
	build := e.file("build.yaml", flows)
	update := e.file("update.yaml", updateFlows(nFlows))
	want := e.cleanCanonical(build, update)
	w := &killWindow{width: e.fastest(func() time.Duration {
		e.reset()
		e.apply(build)
		start := time.Now()
		if r := e.startWriter(update, build, update); r.wait() != 0 {
			t.Fatalf("writer: %s", r.stderr.String())
		}
		return time.Since(start)
	}) * 12 / 10}
	for i := 0; i < killRounds; i++ {
		d, unshaped := e.updateRound(build, marksOf(flows)[:8], w,
			func() *run { return e.startWriter(update, build, update) },
			func() {
				if r := e.startWriter(update); r.wait() != 0 {
					t.Fatalf("round %d: restarted writer: %s", i, r.stderr.String())
				}
			})
		e.checkRound(i, d, unshaped, want)
	}
	w.check(t, "watch writer")
}
