package plan

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

// A bucket is never below what was asked, at any rate the model takes, and
// never wraps: what does not fit the kernel's field is refused.
func TestBufferTicksNeverBelowTheBurst(t *testing.T) {
	for _, rate := range []uint64{shaper.MinRate * 1000, 1e6, 30e6, 1e9, 100e9, 300e9, 10e12} {
		for _, size := range []uint32{1514, 32 << 10, 1 << 20} {
			ticks, ok := BufferTicks(rate, size)
			if !ok {
				continue
			}
			if ticks == 0 {
				t.Errorf("BufferTicks(%s, %d) = 0", shaper.FormatRate(rate), size)
			}
			// What the kernel holds: ticks·64 ns at rate/8 bytes per second.
			if held := float64(ticks) * TickNs / 1e9 * float64(rate) / 8; held < float64(size) {
				t.Errorf("BufferTicks(%s, %d) = %d ticks, holding %.0f bytes", shaper.FormatRate(rate), size, ticks, held)
			}
			if back := BufferBytes(rate, ticks); back < size {
				t.Errorf("BufferBytes(%s, %d) = %d, below %d", shaper.FormatRate(rate), ticks, back, size)
			}
		}
	}
	if _, ok := BufferTicks(8, 32<<10); ok {
		t.Error("a 32k bucket at 8 bit/s (4.6 hours) fits a 32-bit tick count")
	}
	if ticks, ok := BufferTicks(100e9, 32<<10); !ok || ticks != 41 {
		t.Errorf("100gbit 32k = %d ticks, %v; want 41 (tc's whole microseconds give 31)", ticks, ok)
	}
}

func TestCheckPolicyRefusesSizesTheKernelCannotHold(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Policy)
		want string
	}{
		{"quantum 2048m", func(p *Policy) { p.Quantum = 2048 << 20 }, "quantum 2147483648 above 2147483647"},
		{"max_frame 2048m", func(p *Policy) { p.MaxFrame = 2048 << 20 }, "max_frame 2048m above 256k"},
		{"burst 2048m", func(p *Policy) { p.Burst = 2048 << 20 }, "too low for a 2048m burst"},
		{"default_rate 8bit", func(p *Policy) { p.DefaultRate = 8 }, "default_rate"},
	} {
		pol := DefaultPolicy(30e6)
		c.edit(&pol)
		_, ps, ok := CheckPolicy(pol)
		if ok || !strings.Contains(joinProblems(ps), c.want) {
			t.Errorf("%s: ok %v, problems %q; want a refusal saying %q", c.name, ok, joinProblems(ps), c.want)
		}
	}
	pol := DefaultPolicy(30e6)
	pol.Burst = 1
	out, ps, ok := CheckPolicy(pol)
	if !ok || out.Burst != DefaultMaxFrame || !strings.Contains(joinProblems(ps), "burst 1b below the largest frame") {
		t.Errorf("burst 1b: ok %v, burst %d, problems %q; want it raised to a frame with a warning", ok, out.Burst, joinProblems(ps))
	}
}

func TestCheckFlowRefusesARateTooLowForItsBucket(t *testing.T) {
	pol := DefaultPolicy(30e6)
	f := shaper.Flow{ID: shaper.FlowID{SEID: 1, QERID: 2}, Direction: shaper.Downlink, GBR: 8, MBR: 1e6}
	ps, ok := CheckFlow(&f, &pol)
	if ok || !strings.Contains(joinProblems(ps), "gbr") || !strings.Contains(joinProblems(ps), "too low for a 32k burst") {
		t.Errorf("GBR 8bit: ok %v, problems %q; want the flow refused naming gbr", ok, joinProblems(ps))
	}
}

func joinProblems(ps []shaper.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Error() + "\n")
	}
	return b.String()
}
