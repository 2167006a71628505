package vm

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// GoTestRun is the outcome of RunGoTests and RunGuestTests.
type GoTestRun struct {
	*Result
	// Passed, Failed and Skipped list the top-level tests by outcome, as
	// reported by -test.v.
	Passed, Failed, Skipped []string
	// PassedAll also lists the subtests that passed ("TestX/edt").
	PassedAll []string
}

var goTestLineRE = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (Test\S+) `)

// GuestTests are the test binaries one guest run executes, one after the
// other, and what the run must show.
type GuestTests struct {
	// Pkgs maps each package (relative to the repo root: "./shaper/edt/")
	// to the -test.run pattern run in the guest.
	Pkgs map[string]string
	// Env, Modules and KernelSeries are the guest's (Config).
	Env          map[string]string
	Modules      []string
	KernelSeries string
	// Timeout bounds the guest run; each binary gets it less a minute for
	// the boot as -test.timeout.
	Timeout time.Duration
	// Flags are passed on to every binary (e.g. "-test.skip", "Scale").
	Flags []string
	// MustPass are tests (subtests too) that must pass, not skip.
	MustPass []string
	// Log, when set, is logged from every guest line holding it.
	Log string
	// SkipWithoutTests skips the calling test, with a one-line reason,
	// when a package has no test matching its pattern yet.
	SkipWithoutTests bool
}

// RunGuestTests compiles each package's tests on the host, boots the
// guest once and runs them there (-test.v, each in its package
// directory). It fails the calling test if the guest run fails, any test
// fails, none passes or one of MustPass does not pass.
func RunGuestTests(t *testing.T, g GuestTests) *GoTestRun {
	t.Helper()
	Require(t)
	inner := g.Timeout - time.Minute
	if inner < time.Minute {
		inner = g.Timeout / 2
	}
	files, script := map[string]string{}, "set -e\n"
	pkgs := make([]string, 0, len(g.Pkgs))
	for pkg := range g.Pkgs {
		pkgs = append(pkgs, pkg)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		bin := BuildTestBinary(t, pkg)
		if g.SkipWithoutTests && len(bin.List(t, g.Pkgs[pkg])) == 0 {
			t.Skipf("%s has no test matching %q yet", pkg, g.Pkgs[pkg])
		}
		name := "bin/" + strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_") + ".test"
		files[name] = bin.HostPath
		args := append([]string{"-test.run", g.Pkgs[pkg], "-test.v", "-test.count=1", "-test.timeout", inner.String()}, g.Flags...)
		script += bin.Script(name, args...) + "\n"
	}
	res := Run(t, Config{Script: script, Env: g.Env, Files: files, Modules: g.Modules, KernelSeries: g.KernelSeries, Timeout: g.Timeout})
	out := parseGoTests(res, g.Log, t.Log)
	what := strings.Join(pkgs, " ")
	t.Logf("%s in VM: passed %v, failed %v, skipped %v (scenario %s)", what, out.Passed, out.Failed, out.Skipped,
		res.Scenario.Round(100*time.Millisecond))
	switch {
	case res.ExitCode != 0 || len(out.Failed) > 0:
		t.Errorf("%s in the VM exited %d; failed: %v", what, res.ExitCode, out.Failed)
	case len(out.Passed) == 0:
		t.Errorf("%s in the VM: no test passed (skipped: %v)", what, out.Skipped)
	}
	for _, want := range g.MustPass {
		if !slices.Contains(out.PassedAll, want) {
			t.Errorf("%s did not pass in the VM (skipped: %v)", want, out.Skipped)
		}
	}
	return out
}

// parseGoTests sorts the guest's -test.v result lines by outcome, logging
// the lines holding mark (none when empty) with logf.
func parseGoTests(res *Result, mark string, logf func(...any)) *GoTestRun {
	g := &GoTestRun{Result: res}
	for _, l := range strings.Split(res.Output, "\n") {
		if mark != "" && strings.Contains(l, mark) {
			logf(strings.TrimSpace(l))
		}
		m := goTestLineRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		if m[1] == "PASS" {
			g.PassedAll = append(g.PassedAll, m[2])
		}
		if strings.Contains(m[2], "/") {
			continue
		}
		switch m[1] {
		case "PASS":
			g.Passed = append(g.Passed, m[2])
		case "FAIL":
			g.Failed = append(g.Failed, m[2])
		case "SKIP":
			g.Skipped = append(g.Skipped, m[2])
		}
	}
	return g
}

// RunGoTests is RunGuestTests for one package: it skips the calling test,
// with a one-line reason, if pkg has no test matching run yet. env is
// added to the guest environment; timeout bounds the guest run.
func RunGoTests(t *testing.T, pkg, run string, env map[string]string, timeout time.Duration, flags ...string) *GoTestRun {
	t.Helper()
	return RunGuestTests(t, GuestTests{Pkgs: map[string]string{pkg: run}, Env: env, Timeout: timeout, Flags: flags, SkipWithoutTests: true})
}
