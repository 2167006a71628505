package edtbackend

import (
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// The guaranteed class's fq leaf holds a whole horizon (the policy's
// largest delay budget) at the link rate in 256-byte packets (never fewer
// than fq's default limit), in all and for its one flow; the other leaves
// keep fq's own limits.
func TestGuaranteedLeafHoldsTheHorizon(t *testing.T) {
	for _, c := range []struct {
		rate  uint64
		limit uint32
	}{
		{8e6, 10000},    // 100 KB in 100 ms: 390 packets
		{1e9, 48828},    // 12.5 MB
		{1e15, 1 << 24}, // bounded
	} {
		if l := horizonLimit(c.rate, 100*time.Millisecond); l != c.limit {
			t.Errorf("rate %d: limit %d, want %d", c.rate, l, c.limit)
		}
	}
	pol := shaper.DefaultPolicy(20e6)
	pol.Overhead = shaper.Overhead{Fixed: true, Bytes: 14}
	pol.DelayBudgets[9] = 200 * time.Millisecond // flow A's QFI: the largest
	p := MakePlan(testFlows(), pol)
	for _, c := range p.Classes {
		l, fl := leafLimits(c)
		switch c.Minor {
		case MinorGuaranteed:
			if l != 10000 || fl != 10000 {
				t.Errorf("guaranteed leaf limits %d/%d, want 10000/10000 (20 Mbit/s for 200 ms: 1953, below fq's default)", l, fl)
			}
		case MinorDefault, MinorNonGBR:
			if l != fqDefaultLimit || fl != fqDefaultFlowLimit {
				t.Errorf("class %s leaf limits %d/%d, want fq's own", Handle(c.Minor), l, fl)
			}
		}
	}
	if out := p.TCCommands("eth1"); !strings.Contains(out, "parent 6765:10 handle 10: fq orphan_mask 4294967295 limit 10000 flow_limit 10000") {
		t.Errorf("render lacks the guaranteed leaf's limits:\n%s", out)
	}
}

// The program keeps at most edt.DefaultFlowAhead of a flow's packets
// scheduled ahead for the non-GBR class, so that class's leaf, which
// keeps fq's default flow_limit, never drops a packet the clocks were
// charged for.
func TestNonGBRLeafHoldsWhatThePacerSchedules(t *testing.T) {
	for _, c := range tree(shaper.DefaultPolicy(30e6), 0, 58, 0) {
		if c.Minor != MinorNonGBR {
			continue
		}
		limit := c.FqFlowLimit
		if limit == 0 {
			limit = fqDefaultFlowLimit
		}
		if limit <= edt.DefaultFlowAhead {
			t.Errorf("non-GBR leaf flow_limit %d, the pacer schedules up to %d of a flow ahead", limit, edt.DefaultFlowAhead)
		}
	}
}

// A shared leaf's flow table has a bucket for every 4 flows the maps
// hold (two a session), from fq's own 1024 up to its largest, 2^18 (a
// million sessions); the default 65,536 sessions get 2^15.
func TestSharedLeavesFlowTable(t *testing.T) {
	for room, want := range map[int]uint32{0: 15, 1: 10, 2048: 10, 2049: 11, 1 << 16: 15, 1 << 20: 18, 1 << 25: 18} {
		if got := bucketsLog(room); got != want {
			t.Errorf("bucketsLog(%d sessions) = %d, want %d", room, got, want)
		}
	}
	for _, c := range tree(shaper.DefaultPolicy(30e6), 0, 58, 1<<16) {
		want := uint32(15)
		if c.Role != shaper.RoleShared {
			want = 0
		}
		if c.FqBucketsLog != want {
			t.Errorf("class %s: buckets log %d, want %d", c.Name, c.FqBucketsLog, want)
		}
	}
}
