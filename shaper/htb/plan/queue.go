package plan

import (
	"fmt"
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// LeafFloorFrames is the fewest largest frames a FIFO leaf holds, whatever
// its budget: below a few frames a class could not queue the packets one
// HTB dequeue round hands it (and a budget shorter than a frame's
// serialisation would drop every packet).
const LeafFloorFrames = 4

// QueueLimit is the byte limit of the FIFO leaf of a class whose ceil is
// ceil bit/s and whose flow has the given delay budget: ceil × budget, at
// least LeafFloorFrames × maxFrame. A queue that size, drained at the
// ceil (a sender held at its MBR), holds no packet longer than the
// budget. It counts what the class counts (the user's packets under
// packet accounting: the root's size table sets every packet's length).
func QueueLimit(ceil uint64, budget time.Duration, maxFrame uint32) uint32 {
	return uint32(max(shaper.BudgetBytes(ceil, budget), uint64(LeafFloorFrames)*uint64(maxFrame)))
}

// budgetNote says where a FIFO leaf's limit comes from.
func budgetNote(c Class) string {
	return fmt.Sprintf("delay budget %v at ceil %s (at least %d frames)", c.Budget, shaper.FormatRate(c.Ceil), LeafFloorFrames)
}

// renderFIFO is the tc command for a class's FIFO leaf ("" for HTB's
// built-in pfifo: a class without a limit).
func renderFIFO(dev string, t *Tree, c Class) string {
	if c.QueueLimit == 0 {
		return ""
	}
	return fmt.Sprintf("tc qdisc replace dev %s parent %s handle %x: bfifo limit %d  # %s", dev, t.Handle(c.Minor), c.Minor,
		c.QueueLimit, budgetNote(c))
}

// renderFQCodel is the tc command for a class's fq_codel leaf.
func renderFQCodel(dev string, t *Tree, c Class) string {
	target := t.Leaf.TargetUs
	if target == 0 {
		target = 5000
	}
	return fmt.Sprintf("tc qdisc replace dev %s parent %s handle %x: fq_codel limit %d target %s interval %s",
		dev, t.Handle(c.Minor), c.Minor, t.Leaf.Limit, fmtUs(target), fmtUs(t.Leaf.IntervalUs))
}
