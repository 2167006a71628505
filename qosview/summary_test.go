package qosview

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	var ps []Problem
	for i := uint64(1); i <= 5; i++ {
		ps = append(ps, Problem{Kind: WireQFI, SEID: i, PDR: 8, QER: 5, Detail: "x"})
	}
	ps = append(ps, Problem{Kind: DanglingQER, SEID: 9, PDR: 1, QER: 7, Detail: "y"})
	want := []string{
		"wire-qfi seid=1 pdr=8 qer=5: x",
		"wire-qfi seid=2 pdr=8 qer=5: x",
		"dangling-qer seid=9 pdr=1 qer=7: y",
		"wire-qfi: 3 more like the above",
	}
	if diff := cmp.Diff(want, Summarize(ps, 2)); diff != "" {
		t.Errorf("Summarize(2) differs (-want +got):\n%s", diff)
	}
	if got := Summarize(ps, 0); len(got) != 6 {
		t.Errorf("Summarize(0) gave %d lines, want all 6", len(got))
	}
}
