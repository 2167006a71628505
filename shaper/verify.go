package shaper

import (
	"fmt"
	"time"
)

// Verify compares two inspections of one device taken interval apart and
// returns one line per problem and a summary line. A flow class with no
// classifier entry is a problem (nothing can reach it); so is a flow class
// that counted nothing while unclassified traffic grew: packets the
// classifier could place nowhere (Inspection.Unplaced) where it counts
// them, else packets of the default class. gtp5g exports no per-PDR
// counters, so unclassified traffic is the only sign that a flow has
// packets its class does not see. Problems found while reading (dangling
// classifier entries) are problems too.
func Verify(before, after *Inspection, interval time.Duration) (problems []string, summary string) {
	dev, secs := after.Dev, interval.Seconds()
	problems = append(problems, after.Problems...)
	delta := func(handle string) uint64 {
		a, _ := after.Class(handle)
		b, _ := before.Class(handle)
		if a.Counters.Packets < b.Counters.Packets {
			return 0 // class re-created in between
		}
		return a.Counters.Packets - b.Counters.Packets
	}
	dflt := delta(after.Default)
	unclassified := dflt
	what := fmt.Sprintf("the default class %s counted %d packets", after.Default, dflt)
	if before.Unplaced != nil && after.Unplaced != nil && *after.Unplaced >= *before.Unplaced {
		miss := *after.Unplaced - *before.Unplaced
		unclassified = miss
		what = fmt.Sprintf("%d packets matched no classifier entry", miss)
		if miss > 0 {
			problems = append(problems, fmt.Sprintf("dev %s: %d packets in %.0fs matched no %s classifier entry and went to the default class %s",
				dev, miss, secs, after.Classifier, after.Default))
		}
	}
	flows, counting := 0, 0
	if n := len(after.FlowClasses()); after.Classifier == "" && n > 0 {
		problems = append(problems, fmt.Sprintf("dev %s: no classifier is installed: none of its %d flow classes can be reached; every packet goes to the default class %s",
			dev, n, after.Default))
	}
	for _, c := range after.FlowClasses() {
		flows++
		if after.Classifier != "" && c.Key == (Key{}) {
			problems = append(problems, fmt.Sprintf("dev %s: %s: no %s classifier entry points at it; no packet can reach it", dev, classLabel(c), after.Classifier))
			continue
		}
		if delta(c.Handle) > 0 {
			counting++
			continue
		}
		if unclassified > 0 && after.Classifier != "" { // without a classifier, said once above
			problems = append(problems, fmt.Sprintf("dev %s: %s counted no packets in %.0fs while %s: its traffic is likely misclassified",
				dev, classLabel(c), secs, what))
		}
	}
	cls := string(after.Classifier)
	if cls == "" {
		cls = "none"
	}
	summary = fmt.Sprintf("dev %s: %d flow classes, %d counting, default class +%d packets in %.0fs (classifier %s; gtp5g exports no PDR counters: compared with unclassified traffic)",
		dev, flows, counting, dflt, secs, cls)
	return problems, summary
}

// classLabel names a flow class by what classifies it.
func classLabel(c ClassState) string {
	s := "class " + c.Handle
	k := c.Key
	switch {
	case k.TEID != 0 && k.Mark != 0:
		s += fmt.Sprintf(" (teid=%d qfi=%d mark=%#x)", k.TEID, k.QFI, k.Mark)
	case k.TEID != 0 || k.QFI != 0:
		s += fmt.Sprintf(" (teid=%d qfi=%d)", k.TEID, k.QFI)
	case k.Mark != 0:
		s += fmt.Sprintf(" (mark=%#x)", k.Mark)
	}
	return s
}
