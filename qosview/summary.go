package qosview

import "fmt"

// Summarize formats problems for people: at most perKind lines per kind
// (in the order kinds first appear), then one line counting the rest, so
// that one rule shape repeated over 10k sessions does not flood a log.
// perKind <= 0 means no limit.
func Summarize(problems []Problem, perKind int) []string {
	count := map[ProblemKind]int{}
	var order []ProblemKind
	var out []string
	for _, p := range problems {
		if count[p.Kind] == 0 {
			order = append(order, p.Kind)
		}
		count[p.Kind]++
		if perKind <= 0 || count[p.Kind] <= perKind {
			out = append(out, p.String())
		}
	}
	for _, k := range order {
		if n := count[k] - perKind; perKind > 0 && n > 0 {
			out = append(out, fmt.Sprintf("%s: %d more like the above", k, n))
		}
	}
	return out
}
