package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// A FIFO leaf holds its class's ceil × its flow's delay budget in bytes,
// not txqueuelen packets: B held at its 6 Mbit/s MBR queues 15,000 bytes
// (20 ms), where 1,000 of its 1228-byte packets waited 1.6 s. A QFI's own
// budget overrides the default; a small ceil gets the floor of frames.
func TestPlanSizesFIFOLeavesByDelayBudget(t *testing.T) {
	pol := DefaultPolicy(30 * mbit)
	pol.Leaf.Kind = LeafFIFO
	pol.DelayBudgets[2] = 10 * time.Millisecond // flow A's QFI
	slow := shaper.Flow{ID: shaper.FlowID{SEID: 1, QERID: 9}, Name: "D", QFI: 9, Direction: shaper.Downlink, MBR: 100_000, Mark: 9}
	tree := mustPlan(t, append(seedFlows(), slow), pol, nil)
	want := map[string]uint32{"A": 18 * mbit / 8 / 100, "B": 15_000, "C": 75_000, "D": LeafFloorFrames * DefaultMaxFrame}
	for _, c := range tree.FlowClasses() {
		if c.QueueLimit != want[c.Name] {
			t.Errorf("flow %s (ceil %s, budget %v): leaf limit %d bytes, want %d", c.Name, shaper.FormatRate(c.Ceil), c.Budget, c.QueueLimit, want[c.Name])
		}
	}
	if d, _ := tree.Find(DefaultMinor); d.QueueLimit != 75_000 {
		t.Errorf("default class leaf limit %d, want 75000 (30 Mbit/s × 20 ms)", d.QueueLimit)
	}
	cmds := tree.TCCommands("n3")
	for _, w := range []string{"parent 6771:11 handle 11: bfifo limit 15000  # delay budget 20ms at ceil 6mbit",
		"parent 6771:10 handle 10: bfifo limit 22500  # delay budget 10ms at ceil 18mbit"} {
		if !strings.Contains(cmds, w) {
			t.Errorf("plan lacks %q:\n%s", w, cmds)
		}
	}
	pol.Leaf.Kind = LeafAuto
	if cmds := mustPlan(t, seedFlows(), pol, nil).TCCommands("n3"); !strings.Contains(cmds, "# auto: where fq_codel is missing, bfifo limit 15000, delay budget 20ms at ceil 6mbit") {
		t.Errorf("auto leaves do not show the FIFO fallback's limit:\n%s", cmds)
	}
}

// A budget outside its range is one policy error naming the field.
func TestPlanRefusesBadDelayBudget(t *testing.T) {
	pol := DefaultPolicy(30 * mbit)
	pol.DelayBudgets[5] = time.Minute
	_, probs := Plan(seedFlows(), pol, nil)
	if p, bad := shaper.FirstError(probs); !bad || p.Field != "delay_budgets" || !strings.Contains(p.Detail, "qfi 5") {
		t.Errorf("budget of a minute: problems %v, want an error on delay_budgets naming qfi 5", probs)
	}
}
