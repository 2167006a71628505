package vm

import (
	"slices"
	"testing"
)

// The guest's -test.v lines sort into top-level outcomes, subtests count
// only as passed ones (for MustPass), and marked lines are logged.
func TestParseGoTests(t *testing.T) {
	out := "=== RUN   TestA\n--- PASS: TestA (0.01s)\n    --- PASS: TestB/edt (1.00s)\n    --- FAIL: TestB/htb (1.00s)\n" +
		"--- FAIL: TestB (2.00s)\n--- SKIP: TestC (0.00s)\n  GBRSHARE A 4.5\nok\n"
	var logged []string
	g := parseGoTests(&Result{Output: out}, "GBRSHARE", func(a ...any) { logged = append(logged, a[0].(string)) })
	if !slices.Equal(g.Passed, []string{"TestA"}) || !slices.Equal(g.Failed, []string{"TestB"}) || !slices.Equal(g.Skipped, []string{"TestC"}) {
		t.Errorf("passed %v, failed %v, skipped %v", g.Passed, g.Failed, g.Skipped)
	}
	if !slices.Equal(g.PassedAll, []string{"TestA", "TestB/edt"}) {
		t.Errorf("passed with subtests %v", g.PassedAll)
	}
	if !slices.Equal(logged, []string{"GBRSHARE A 4.5"}) {
		t.Errorf("logged %q", logged)
	}
}
