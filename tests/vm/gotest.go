package vm

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// GoTestRun is the outcome of RunGoTests.
type GoTestRun struct {
	*Result
	// Passed, Failed and Skipped list the top-level tests by outcome, as
	// reported by -test.v.
	Passed, Failed, Skipped []string
}

var goTestLineRE = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (Test\S+) `)

// RunGoTests compiles pkg's tests on the host, boots the guest and runs
// the tests matching run there (-test.v, in the package directory). It
// skips the calling test, with a one-line reason, if pkg has no test
// matching run yet; it fails it if the guest run fails, any test fails or
// none passes. env is added to the guest environment; timeout bounds the
// guest run (the tests get it minus a minute for boot, as -test.timeout).
// flags are passed on to the test binary (e.g. "-test.skip", "Scale").
func RunGoTests(t *testing.T, pkg, run string, env map[string]string, timeout time.Duration, flags ...string) *GoTestRun {
	t.Helper()
	Require(t)
	bin := BuildTestBinary(t, pkg)
	if names := bin.List(t, run); len(names) == 0 {
		t.Skipf("%s has no test matching %q yet", pkg, run)
	}
	inner := timeout - time.Minute
	if inner < time.Minute {
		inner = timeout / 2
	}
	name := "bin/" + strings.Trim(pkg, "./") + ".test"
	name = strings.ReplaceAll(name, "/", "_")
	args := append([]string{"-test.run", run, "-test.v", "-test.count=1", "-test.timeout", inner.String()}, flags...)
	script := "set -e\n" + bin.Script(name, args...) + "\n"
	res := Run(t, Config{
		Script:  script,
		Env:     env,
		Files:   map[string]string{name: bin.HostPath},
		Timeout: timeout,
	})
	g := &GoTestRun{Result: res}
	for _, l := range strings.Split(res.Output, "\n") {
		m := goTestLineRE.FindStringSubmatch(l)
		if m == nil || strings.Contains(m[2], "/") {
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
	t.Logf("%s in VM: passed %v, failed %v, skipped %v (scenario %s)", pkg, g.Passed, g.Failed, g.Skipped,
		res.Scenario.Round(100*time.Millisecond))
	switch {
	case res.ExitCode != 0 || len(g.Failed) > 0:
		t.Errorf("%s -test.run %s in the VM exited %d; failed: %v", pkg, run, res.ExitCode, g.Failed)
	case len(g.Passed) == 0:
		t.Errorf("%s -test.run %s in the VM: no test passed (skipped: %v)", pkg, run, g.Skipped)
	}
	return g
}
