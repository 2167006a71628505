package htb

import (
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// The planning tests' fixtures (package plan's), for the kernel tests.

const mbit = 1_000_000

func seedFlows() []shaper.Flow {
	return []shaper.Flow{
		{ID: shaper.FlowID{SEID: 1, QERID: 1}, Name: "A", QFI: 2, Direction: shaper.Downlink, GBR: 15 * mbit, MBR: 18 * mbit, Mark: 2},
		{ID: shaper.FlowID{SEID: 1, QERID: 2}, Name: "B", QFI: 3, Direction: shaper.Downlink, GBR: 5 * mbit, MBR: 6 * mbit, Mark: 3},
		{ID: shaper.FlowID{SEID: 1, QERID: 3}, Name: "C", QFI: 4, Direction: shaper.Downlink, MBR: 30 * mbit, Mark: 4},
	}
}

// rc is a compact class description for comparisons.
type rc struct {
	Minor, Parent uint16
	Role          shaper.Role
	Rate, Ceil    uint64
	Mark          uint32
}

func compact(t *plan.Tree) []rc {
	out := []rc{}
	for _, c := range t.Classes {
		out = append(out, rc{c.Minor, c.Parent, c.Role, c.Rate, c.Ceil, c.Mark})
	}
	return out
}
