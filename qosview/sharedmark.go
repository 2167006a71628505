package qosview

import (
	"fmt"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
	"github.com/free5gc/gtpqos/shaper"
)

// sharedMarks reports every flow that carries the mark of an earlier flow
// of its direction (flows in Build's order): the classifier sends both
// flows' packets to one class, so the later flow is not enforced alone.
// The detail names both flows and why the mode made them meet.
func sharedMarks(flows []shaper.Flow, mode gtp5g.MarkMode) []Problem {
	type key struct {
		dir  shaper.Direction
		mark uint32
	}
	first := map[key]int{}
	var out []Problem
	for i, f := range flows {
		if f.Mark == 0 {
			continue
		}
		k := key{f.Direction, f.Mark}
		j, seen := first[k]
		if !seen {
			first[k] = i
			continue
		}
		o := flows[j]
		out = append(out, Problem{Kind: SharedMark, SEID: f.ID.SEID, QER: f.ID.QERID, Detail: fmt.Sprintf(
			"%s flow %s carries mark %#x like flow %s, so it is enforced in that flow's class, not alone: %s",
			f.Direction, f.ID, f.Mark, o.ID, sharedWhy(mode, f, o))})
	}
	return out
}

// sharedWhy says why mode gave two flows one mark, and what to do.
func sharedWhy(mode gtp5g.MarkMode, f, o shaper.Flow) string {
	switch mode {
	case gtp5g.MarkQFI:
		if f.ID.SEID != o.ID.SEID {
			return fmt.Sprintf("mark mode qfi marks by the QFI on the wire (%d), which both sessions use; use mark mode pdr (or flow)", f.Mark)
		}
		return fmt.Sprintf("mark mode qfi marks by the QFI on the wire and both flows go out with QFI %d; use mark mode pdr", f.Mark)
	case gtp5g.MarkFlow:
		return "mark mode flow marks a PDR with the flow mark of its first QER with a QFI, which both flows' PDRs share (e.g. the session-AMBR QER listed first); use mark mode pdr"
	case gtp5g.MarkPDR:
		return "mark mode pdr gives every PDR a mark of its own, so gtp5g reported one mark for two PDRs"
	}
	return "the marks come from outside gtp5g"
}

// NotAlone counts the flows of problems that are not enforced in a class of
// their own (SharedMark).
func NotAlone(problems []Problem) int {
	n := 0
	for _, p := range problems {
		if p.Kind == SharedMark {
			n++
		}
	}
	return n
}
