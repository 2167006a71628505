package shaper

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Delay budgets: how long a flow's packet may wait in the shaper's queue
// before it is dropped instead. A budget is a contract (the core network's
// share of the QoS flow's packet delay budget, TS 23.501 5.7.3.4), so it
// belongs to the policy every backend honours: HTB sizes a FIFO leaf by
// it, edt drops a packet scheduled further ahead than it.
const (
	// DefaultDelayBudget is a flow's budget when its QFI has none of its
	// own: 20 ms, the core network's share TS 23.501 assumes for the
	// 5QIs that are not delay-critical.
	DefaultDelayBudget = 20 * time.Millisecond
	// MinDelayBudget and MaxDelayBudget bound a budget: below 100 µs no
	// queue holds a packet's serialisation at these rates, and above 10 s
	// a budget no longer bounds anything a user would notice.
	MinDelayBudget = 100 * time.Microsecond
	MaxDelayBudget = 10 * time.Second
)

// QFIBudgets are delay budgets by QFI (0: the policy's default). An array,
// not a map, so a Policy stays comparable.
type QFIBudgets [64]time.Duration

// BudgetOf returns the delay budget of a flow with the given QFI: its
// QFI's own, else the policy's default (DefaultDelayBudget when unset).
func (p *Policy) BudgetOf(qfi uint8) time.Duration {
	if int(qfi) < len(p.DelayBudgets) && p.DelayBudgets[qfi] != 0 {
		return p.DelayBudgets[qfi]
	}
	return p.defaultBudget()
}

// defaultBudget is the budget of a QFI without its own.
func (p *Policy) defaultBudget() time.Duration {
	if p.DelayBudget == 0 {
		return DefaultDelayBudget
	}
	return p.DelayBudget
}

// checkBudgets reports a budget outside [MinDelayBudget, MaxDelayBudget]
// and sets an unset default to DefaultDelayBudget.
func (ps *problems) checkBudgets(pol *Policy) bool {
	ok := true
	if pol.DelayBudget == 0 {
		pol.DelayBudget = DefaultDelayBudget
	}
	bad := func(d time.Duration) bool { return d < MinDelayBudget || d > MaxDelayBudget }
	if bad(pol.DelayBudget) {
		ps.report(Error, BadPolicy, nil, "delay_budget", "delay budget %v outside %v..%v", pol.DelayBudget, MinDelayBudget, MaxDelayBudget)
		ok = false
	}
	for qfi, d := range pol.DelayBudgets {
		if d != 0 && bad(d) {
			ps.report(Error, BadPolicy, nil, "delay_budgets", "delay budget %v of qfi %d outside %v..%v", d, qfi, MinDelayBudget, MaxDelayBudget)
			ok = false
		}
	}
	return ok
}

// ParseDelayBudget parses a budget ("20ms") in [MinDelayBudget,
// MaxDelayBudget].
func ParseDelayBudget(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (e.g. 20ms)", s)
	}
	if d < MinDelayBudget || d > MaxDelayBudget {
		return 0, fmt.Errorf("delay budget %v outside %v..%v", d, MinDelayBudget, MaxDelayBudget)
	}
	return d, nil
}

// applyBudgets sets the default budget (delay_budget) and the QFIs' own
// (delay_budgets: {qfi: duration}).
func (p *PolicyYAML) applyBudgets(pol *Policy) error {
	if p.DelayBudget != "" {
		d, err := ParseDelayBudget(p.DelayBudget)
		if err != nil {
			return fmt.Errorf("delay_budget: %w", err)
		}
		pol.DelayBudget = d
	}
	for _, k := range slices.Sorted(maps.Keys(p.DelayBudgets)) {
		qfi, err := ParseUint(k, 8)
		if err != nil || qfi > 63 {
			return fmt.Errorf("delay_budgets: key %q: want a QFI 0..63", k)
		}
		d, err := ParseDelayBudget(p.DelayBudgets[k])
		if err != nil {
			return fmt.Errorf("delay_budgets: qfi %d: %w", qfi, err)
		}
		pol.DelayBudgets[qfi] = d
	}
	return nil
}

// BudgetBytes is what a queue drained at rate bit/s holds in budget:
// rate × budget in bytes, capped at 1 GiB (a kernel limit is 32 bits).
func BudgetBytes(rate uint64, budget time.Duration) uint64 {
	b := float64(rate) / 8 * budget.Seconds()
	return uint64(min(b, 1<<30))
}

// DescribeBudgets says in one line what each flow's queue may hold:
// "delay budget 20ms (qfi 1: 10ms, qfi 5: 1ms)".
func (p *Policy) DescribeBudgets() string {
	var own []string
	for qfi, d := range p.DelayBudgets {
		if d != 0 {
			own = append(own, fmt.Sprintf("qfi %d: %v", qfi, d))
		}
	}
	s := fmt.Sprintf("delay budget %v", p.defaultBudget())
	if len(own) > 0 {
		s += " (" + strings.Join(own, ", ") + ")"
	}
	return s
}

// MaxBudget is the largest budget any flow under p can have (the default
// or a QFI's own): what a queue shared by flows of every QFI must hold.
func (p *Policy) MaxBudget() time.Duration {
	m := p.defaultBudget()
	for _, d := range p.DelayBudgets {
		m = max(m, d)
	}
	return m
}
