package edtbackend

import (
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// A flow's horizon is the policy's delay budget for its QFI, the same
// budget that sizes HTB's FIFO leaves.
func TestPlanHorizonIsTheDelayBudget(t *testing.T) {
	pol := shaper.DefaultPolicy(20e6)
	pol.Overhead = shaper.Overhead{Fixed: true, Bytes: 14}
	pol.DelayBudgets[1] = 5 * time.Millisecond
	want := map[string]time.Duration{"A": shaper.DefaultDelayBudget, "B": shaper.DefaultDelayBudget, "G": 5 * time.Millisecond}
	for _, f := range MakePlan(testFlows(), pol).Flows {
		if f.Spec.DelayBudget != want[f.Flow.Name] {
			t.Errorf("flow %s (qfi %d): horizon %v, want %v", f.Flow.Name, f.Flow.QFI, f.Spec.DelayBudget, want[f.Flow.Name])
		}
	}
}
