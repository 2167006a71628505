package backends

import (
	"fmt"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// flowsFile is a flows file of n flows, one per line as a program writes
// them.
func flowsFile(n int) []byte {
	var b strings.Builder
	b.WriteString("link: 100gbit\nflows:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {name: f%d, seid: %d, qer: 1, qfi: 9, direction: downlink, gbr: 1mbit, mbr: 2mbit, mark: %d}\n", i, i, i)
	}
	return []byte(b.String())
}

// BenchmarkPlanFile measures `gtpqos plan` of a flows file of the most
// flows one tree holds (65,518, a 6.9 MB file): parse, plan and render
// the tc commands, as the command does.
//
//	go test -run '^$' -bench PlanFile -benchtime 3x -benchmem ./shaper/backends/
func BenchmarkPlanFile(b *testing.B) {
	data := flowsFile(plan.MaxClasses)
	b.SetBytes(int64(len(data)))
	for range b.N {
		ff, err := shaper.ParseFlowsFile("flows.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		p, err := Plan(ff.Flows, ff.Policy, shaper.Downlink)
		if err != nil || len(p.Problems) != 0 {
			b.Fatalf("plan: %v, %v", err, p.Problems)
		}
		if out := p.Render("DEV"); strings.Count(out, "class replace") != plan.MaxClasses+2 {
			b.Fatalf("rendered %d classes", strings.Count(out, "class replace"))
		}
	}
}
