package edt

import (
	"testing"
	"time"
)

// A mark finds its flow whether the flow's id is that mark (one lookup in
// flows) or not (through marks): a flow whose id equals another flow's
// mark but is not one of its own marks never takes that mark's packets.
func TestMarkFindsItsFlow(t *testing.T) {
	p := loadForTest(t, testOptions())
	for id, s := range map[uint32]FlowSpec{
		4: {Marks: []uint32{3, 4}, MBR: 1e9, DelayBudget: time.Hour, Class: classNonGBR}, // id is its second mark
		5: {Marks: []uint32{9}, MBR: 1e9, DelayBudget: time.Hour, Class: classNonGBR},    // id is no mark
		9: {Marks: []uint32{12}, MBR: 1e9, DelayBudget: time.Hour, Class: classNonGBR},   // id is flow 5's mark
	} {
		if err := p.AddFlow(id, s); err != nil {
			t.Fatal(err)
		}
	}
	for mark, want := range map[uint32]uint32{3: 4, 4: 4, 9: 5, 12: 9} {
		if _, out := run(t, p, mark, frame(100)); out.cb(1) != want {
			t.Errorf("mark %d: flow %d, want %d", mark, out.cb(1), want)
		}
	}
	for id, n := range map[uint32]uint64{4: 2, 5: 1, 9: 1} {
		if st, err := p.Flow(id); err != nil || st.Packets != n {
			t.Errorf("flow %d: %+v, %v; want %d packets", id, st, err, n)
		}
	}
	// Removed, a flow found by its id is gone for its marks too.
	if err := p.RemoveFlow(4, 3, 4); err != nil {
		t.Fatal(err)
	}
	if _, out := run(t, p, 4, frame(100)); out.cb(1) == 4 {
		t.Error("mark 4 still finds removed flow 4")
	}
}
