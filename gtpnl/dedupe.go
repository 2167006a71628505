package gtpnl

import "reflect"

// gtp5g v0.10.2's dumpit resumes a multi-part dump by (hash bucket, rule
// id) only, not by SEID: when several sessions use the same rule id (every
// free5GC session has a QER 1, a PDR 1, ...) and land in one bucket, a
// resumed dump can emit a rule a second time. dedupe drops such exact
// repeats (same SEID and id, identical content), keeping the first; rules
// that share SEID and id but differ are kept for the caller to report.
func dedupe[T any](rules []T, key func(*T) [2]uint64) []T {
	first := make(map[[2]uint64]int, len(rules)) // key -> index in out
	var more map[[2]uint64][]int                 // further distinct rules per key (rare)
	out := rules[:0]
	for i := range rules {
		k := key(&rules[i])
		j, ok := first[k]
		if !ok {
			first[k] = len(out)
			out = append(out, rules[i])
			continue
		}
		dup := reflect.DeepEqual(out[j], rules[i])
		for _, j := range more[k] {
			dup = dup || reflect.DeepEqual(out[j], rules[i])
		}
		if dup {
			continue
		}
		if more == nil {
			more = map[[2]uint64][]int{}
		}
		more[k] = append(more[k], len(out))
		out = append(out, rules[i])
	}
	return out
}

func qerKey(q *QER) [2]uint64 { return [2]uint64{q.SEID, uint64(q.ID)} }
func pdrKey(p *PDR) [2]uint64 { return [2]uint64{p.SEID, uint64(p.ID)} }
func farKey(f *FAR) [2]uint64 { return [2]uint64{f.SEID, uint64(f.ID)} }
