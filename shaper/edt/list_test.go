package edt

import (
	"testing"
	"time"
)

// What a backend reads back: every flow with its marks and a config that
// Matches the spec written (and not a changed one), the sessions' AMBRs,
// an AMBR changed in place, and the default class.
func TestReadBack(t *testing.T) {
	p := loadForTest(t, LoadOptions{Sessions: 16, Flows: 16, Marks: 16})
	if err := p.AddSession(7, 3_000_000); err != nil {
		t.Fatal(err)
	}
	specs := map[uint32]FlowSpec{
		1: {Marks: []uint32{0x10, 0x11}, Session: 7, MBR: 1_000_000, DelayBudget: time.Second, Class: 0x67650011},
		2: {Marks: []uint32{0x20}, GBR: 500_000, MBR: 2_000_000, DelayBudget: time.Second, Class: 0x67650011, GBRClass: 0x67650010},
	}
	for id, s := range specs {
		if err := p.AddFlow(id, s); err != nil {
			t.Fatal(err)
		}
	}
	got, err := p.ReadFlows()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("read %d flows, want 2", len(got))
	}
	for id, s := range specs {
		if !got[id].Matches(id, s) {
			t.Errorf("flow %d read back as %+v, does not match %+v", id, got[id].Spec, s)
		}
		changed := s
		changed.MBR++
		if got[id].Matches(id, changed) {
			t.Errorf("flow %d matches a spec with another MBR", id)
		}
		changed = s
		changed.Marks = changed.Marks[:len(changed.Marks)-1]
		if got[id].Matches(id, changed) {
			t.Errorf("flow %d matches a spec with a mark less", id)
		}
	}
	if err := p.SetSessionAMBR(7, 5_000_000); err != nil {
		t.Fatal(err)
	}
	if s, err := p.ReadSessions(); err != nil || len(s) != 1 || s[7] != 5_000_000 {
		t.Errorf("sessions %v, %v; want session 7 at 5 Mbit/s", s, err)
	}
	if err := p.SetSessionAMBR(8, 1); err == nil {
		t.Error("AMBR of a missing session set")
	}
	if err := p.SetDefaultClass(0x67650002); err != nil {
		t.Fatal(err)
	}
	if d, err := p.DefaultClass(); err != nil || d != 0x67650002 {
		t.Errorf("default class %#x, %v", d, err)
	}
}
