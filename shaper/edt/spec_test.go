package edt

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestFlowSpecCheck(t *testing.T) {
	ok := FlowSpec{Marks: []uint32{1}, DelayBudget: time.Millisecond}
	for _, tc := range []struct {
		name string
		edit func(*FlowSpec)
		want string
	}{
		{"no marks", func(s *FlowSpec) { s.Marks = nil }, "flow 4: no marks and no keys"},
		{"mark 0", func(s *FlowSpec) { s.Marks = []uint32{0} }, "mark 0x0"},
		{"mark high bits", func(s *FlowSpec) { s.Marks = []uint32{1 << 24} }, "mark 0x1000000 outside"},
		{"no budget", func(s *FlowSpec) { s.DelayBudget = 0 }, "delay budget 0s not positive"},
		{"gbr above mbr", func(s *FlowSpec) { s.GBR, s.MBR, s.GBRClass = 2, 1, 1 }, "GBR 2 bit/s above MBR 1 bit/s"},
		{"gbr without class", func(s *FlowSpec) { s.GBR = 1 }, "no guaranteed class"},
	} {
		s := ok
		tc.edit(&s)
		err := s.check(4)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	if err := ok.check(4); err != nil {
		t.Errorf("valid spec: %v", err)
	}
}

// Flags and derived values: only a non-GBR flow with a session is under
// the AMBR; the GBR burst turns into the time it takes at the GBR; a flow
// without a hash gets one of its id's, never 0.
func TestFlowSpecValue(t *testing.T) {
	v := FlowSpec{Session: 3, DelayBudget: time.Second}.value(1, 0)
	if v.Flags&flowAMBR == 0 || v.BudgetNs != 1e9 || v.Hash != flowHash(1) || v.Hash == 0 {
		t.Errorf("non-GBR flow value %+v", v)
	}
	g := FlowSpec{Session: 3, GBR: 8_000_000, GBRClass: 1, DelayBudget: time.Second}.value(2, 0)
	if g.Flags&flowAMBR != 0 {
		t.Errorf("a GBR flow is under the session AMBR")
	}
	if want := uint64(DefaultGBRBurst) * 8 * 1e9 / 8_000_000; g.GbrBurstNs != want {
		t.Errorf("GBR burst %d ns, want %d", g.GbrBurstNs, want)
	}
	if flowHash(1) == flowHash(2) {
		t.Errorf("flows 1 and 2 share hash %#x", flowHash(1))
	}
}

func TestLoadOptionsResolve(t *testing.T) {
	o := LoadOptions{}
	if err := o.resolve(); err != nil || o.Sessions != DefaultSessions || o.Flows != DefaultFlows || o.Marks != DefaultMarks {
		t.Errorf("defaults %+v (%v)", o, err)
	}
	for _, bad := range []LoadOptions{{Flows: -1}, {Marks: MaxEntries + 1}, {Overhead: 513}} {
		if err := bad.resolve(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// Ids and marks in use are refused by name, and a refused flow leaves
// nothing behind.
func TestAddConflicts(t *testing.T) {
	p := loadForTest(t, testOptions())
	s := FlowSpec{Marks: []uint32{1, 2}, DelayBudget: time.Second}
	if err := p.AddFlow(1, s); err != nil {
		t.Fatal(err)
	}
	if err := p.AddFlow(1, s); err == nil || !strings.Contains(err.Error(), "flow 1 exists") {
		t.Errorf("second flow 1: %v", err)
	}
	if err := p.AddFlow(2, FlowSpec{Marks: []uint32{3, 2}, DelayBudget: time.Second}); err == nil || !strings.Contains(err.Error(), "mark 0x2 belongs to flow 1") {
		t.Errorf("flow 2 with flow 1's mark: %v", err)
	}
	var id uint32
	if err := p.objs.Marks.Lookup(uint32(3), &id); err == nil {
		t.Errorf("refused flow 2 left mark 3 behind")
	}
	if _, err := p.Flow(2); err == nil {
		t.Errorf("refused flow 2 left its flow entry behind")
	}
	if err := p.AddSession(0, 1); err == nil {
		t.Errorf("session 0 accepted")
	}
	if err := p.AddSession(4, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.AddSession(4, 1); err == nil || !strings.Contains(err.Error(), "session 4 exists") {
		t.Errorf("second session 4: %v", err)
	}
	// Removing leaves a mark that another flow took over alone.
	if err := p.RemoveFlow(1, 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.AddFlow(5, FlowSpec{Marks: []uint32{1}, DelayBudget: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveFlow(1, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.objs.Marks.Lookup(uint32(1), &id); err != nil || id != 5 {
		t.Errorf("mark 1 after removing flow 1 again: flow %d (%v), want flow 5's", id, err)
	}
	if err := p.RemoveSession(4); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveSession(4); err != nil {
		t.Errorf("removing a removed session: %v", err)
	}
}

// Batch writes land like single ones.
func TestBatchAdd(t *testing.T) {
	p := loadForTest(t, testOptions())
	var ss []Session
	var fs []Flow
	for i := uint32(1); i <= 300; i++ {
		ss = append(ss, Session{ID: i, AMBR: 1_000_000})
		fs = append(fs, Flow{ID: i, Spec: FlowSpec{Marks: []uint32{i}, Session: i, DelayBudget: time.Hour, Class: classNonGBR}})
	}
	if err := p.AddSessions(ss); err != nil {
		t.Fatal(err)
	}
	if err := p.AddFlows(fs); err != nil {
		t.Fatal(err)
	}
	_, out := run(t, p, 300, frame(1000))
	if out.cb(1) != 300 || out.priority() != classNonGBR {
		t.Errorf("mark 300: flow %d class %#x", out.cb(1), out.priority())
	}
	if c, err := p.SessionClock(300); err != nil || c != out.tstamp()+txNs(1000, 1_000_000) {
		t.Errorf("session 300 clock %d (%v), want %d", c, err, out.tstamp()+txNs(1000, 1_000_000))
	}
	if err := p.AddFlows([]Flow{{ID: 1, Spec: FlowSpec{}}}); err == nil {
		t.Errorf("batch with a bad spec accepted")
	}
}

// A clock's idle credit is the burst's time at the rate, computed once in
// user space: exact where it fits, saturated where it would not (a rate of
// 1 bit/s and a 4 GiB burst), none without a rate.
func TestCreditNs(t *testing.T) {
	for _, tc := range []struct {
		burst uint32
		bps   uint64
		want  uint64
	}{
		{DefaultBurst, 8, 32768 * uint64(time.Second)},
		{DefaultBurst, 10e9, 26214},
		{DefaultBurst, 0, 0},
		{^uint32(0), 1, math.MaxUint64},
	} {
		if got := creditNs(tc.burst, tc.bps); got != tc.want {
			t.Errorf("creditNs(%d, %d) = %d, want %d", tc.burst, tc.bps, got, tc.want)
		}
	}
}
