package edt

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A write into a full map says so, by map, one at a time and in a batch,
// instead of the kernel's E2BIG ("key too big for map").
func TestMapFullSaysSo(t *testing.T) {
	p := loadForTest(t, LoadOptions{Sessions: 2, Flows: 2, Marks: 4, Overhead: testOverhead})
	for id := uint32(1); id <= 2; id++ {
		if err := p.AddSession(id, 1e6); err != nil {
			t.Fatal(err)
		}
	}
	err := p.AddSession(3, 1e6)
	if !errors.Is(err, ErrMapFull) || !strings.Contains(err.Error(), "map sessions") {
		t.Errorf("third session into a map of 2: %v", err)
	}
	spec := func(m uint32) FlowSpec {
		return FlowSpec{Marks: []uint32{m}, MBR: 1e6, DelayBudget: time.Second, Class: classNonGBR}
	}
	if err := p.AddFlows([]Flow{{ID: 1, Spec: spec(1)}, {ID: 2, Spec: spec(2)}, {ID: 3, Spec: spec(3)}}); !errors.Is(err, ErrMapFull) || !strings.Contains(err.Error(), "map flows") {
		t.Errorf("three flows in a batch into a map of 2: %v", err)
	}
}
