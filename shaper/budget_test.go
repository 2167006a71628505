package shaper

import (
	"strings"
	"testing"
	"time"
)

// A policy's delay budgets: a default and the QFIs' own, read from a flows
// file; a flow's budget is its QFI's, else the default.
func TestPolicyDelayBudgets(t *testing.T) {
	ff, err := ParseFlowsFile("f.yaml", []byte("link: 30mbit\npolicy:\n  delay_budget: 30ms\n  delay_budgets: {1: 10ms, 0x5: 1ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := ff.Policy
	for qfi, want := range map[uint8]time.Duration{1: 10 * time.Millisecond, 5: time.Millisecond, 9: 30 * time.Millisecond} {
		if got := p.BudgetOf(qfi); got != want {
			t.Errorf("qfi %d: budget %v, want %v", qfi, got, want)
		}
	}
	if got := p.DescribeBudgets(); got != "delay budget 30ms (qfi 1: 10ms, qfi 5: 1ms)" {
		t.Errorf("described as %q", got)
	}
	if p.MaxBudget() != 30*time.Millisecond {
		t.Errorf("largest budget %v, want the default 30ms", p.MaxBudget())
	}
	p.DelayBudgets[7] = time.Second
	if p.MaxBudget() != time.Second {
		t.Errorf("largest budget %v, want qfi 7's 1s", p.MaxBudget())
	}
	if d := DefaultPolicy(1e6); d.BudgetOf(3) != DefaultDelayBudget {
		t.Errorf("default policy: budget %v, want %v", d.BudgetOf(3), DefaultDelayBudget)
	}
	var zero Policy
	if zero.BudgetOf(3) != DefaultDelayBudget {
		t.Errorf("zero policy: budget %v, want the default", zero.BudgetOf(3))
	}
	for in, want := range map[string]string{
		"delay_budget: 0s":               "delay_budget: delay budget 0s outside 100µs..10s",
		"delay_budget: soon":             `delay_budget: invalid duration "soon"`,
		"delay_budgets: {64: 5ms}":       `delay_budgets: key "64": want a QFI 0..63`,
		"delay_budgets: {3: 11s}":        "delay_budgets: qfi 3: delay budget 11s outside",
		"delay_budgets: {x: 5ms}":        `delay_budgets: key "x"`,
		"delay_budgets: {3: 5}":          `delay_budgets: qfi 3: invalid duration "5"`,
		"delay_budgets: {1: 1ms, 2: 0s}": "delay_budgets: qfi 2",
	} {
		_, err := ParseFlowsFile("f.yaml", []byte("link: 30mbit\npolicy:\n  "+in+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", in, err, want)
		}
	}
}
