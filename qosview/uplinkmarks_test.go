package qosview

import (
	"slices"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

func uplink(seid uint64, qer uint32, mark uint32) shaper.Flow {
	f := shaper.Flow{ID: shaper.FlowID{SEID: seid, QERID: qer}, QFI: 1, MBR: 1e6}
	f.Direction, f.Mark, f.TEID = shaper.Uplink, mark, uint32(seid)
	return f
}

func TestUplinkMarksUniqueStableAndSparing(t *testing.T) {
	var in []shaper.Flow
	for s := uint64(1); s <= 3000; s++ {
		in = append(in, uplink(s, 1, 0), uplink(s, 2, 0))
	}
	in = append(in, uplink(9000, 1, 0x42)) // already marked: kept
	dl := shaper.Flow{ID: shaper.FlowID{SEID: 9001, QERID: 1}, QFI: 1, Direction: shaper.Downlink, MBR: 1e6}
	dl.Mark = 0
	in = append(in, dl) // downlink: left alone

	var sm UplinkMarks
	out := sm.Assign(in)
	seen := map[uint32]shaper.FlowID{}
	for i, f := range out {
		switch {
		case f.Direction == shaper.Downlink:
			if f.Mark != 0 {
				t.Fatalf("downlink flow %s got mark %#x", f.ID, f.Mark)
			}
			continue
		case in[i].Mark != 0:
			if f.Mark != in[i].Mark {
				t.Fatalf("flow %s: mark %#x changed to %#x", f.ID, in[i].Mark, f.Mark)
			}
		case f.Mark < stockMarkBase || f.Mark >= stockMarkBase+stockMarkSpan || f.Mark&0xFF000000 != 0:
			t.Fatalf("flow %s: mark %#x outside the stock range (24 bits, bit 31 clear)", f.ID, f.Mark)
		}
		if other, dup := seen[f.Mark]; dup {
			t.Fatalf("flows %s and %s share mark %#x", other, f.ID, f.Mark)
		}
		seen[f.Mark] = f.ID
	}

	// A restarted daemon (fresh UplinkMarks) given the same rules in
	// another order assigns the same marks: it adopts its classes.
	rev := slices.Clone(in)
	slices.Reverse(rev)
	var fresh UplinkMarks
	again := map[shaper.FlowID]uint32{}
	for _, f := range fresh.Assign(rev) {
		again[f.ID] = f.Mark
	}
	for _, f := range out {
		if again[f.ID] != f.Mark {
			t.Fatalf("flow %s: mark %#x, after restart %#x", f.ID, f.Mark, again[f.ID])
		}
	}

	// Flows keep their marks when others come and go.
	next := sm.Assign(append(slices.Clone(in[100:]), uplink(7777, 1, 0)))
	for _, f := range next {
		if m, ok := again[f.ID]; ok && m != f.Mark {
			t.Fatalf("flow %s: mark changed from %#x to %#x when other flows left", f.ID, m, f.Mark)
		}
	}
}
