package plan

import (
	"math"

	"github.com/free5gc/gtpqos/shaper"
)

// The kernel keeps a class's token buckets as time: HTB's buffer and
// cbuffer are psched ticks of 64 ns (PSCHED_SHIFT 6), 32 bits wide. A
// burst of b bytes at r bit/s is b·8/r seconds of the class's rate.
const (
	// TickNs is one psched tick in nanoseconds.
	TickNs = 64
	// MaxBufferTicks is the largest buffer the kernel's 32-bit field holds
	// (about 275 s of a class's rate).
	MaxBufferTicks = math.MaxUint32
)

// BufferTicks is the buffer, in psched ticks, that lets a class at rate
// (bit/s) send size bytes at once. It rounds up, so the kernel's bucket is
// never below size (tc truncates to whole microseconds first, which at
// 100 Gbit/s cuts a 32 KiB burst to 25 KB and at 300 Gbit/s to nothing).
// ok is false when the buffer does not fit the kernel's field or rate is 0.
func BufferTicks(rate uint64, size uint32) (ticks uint32, ok bool) {
	if rate == 0 {
		return 0, false
	}
	// size·8·1e9/64 bit·ns per tick = size·125e6; below 2^59 for any u32.
	num := uint64(size) * 125_000_000
	t := num / rate
	if num%rate != 0 {
		t++
	}
	if t > MaxBufferTicks {
		return 0, false
	}
	return uint32(t), true
}

// BufferBytes is what a buffer of ticks holds at rate (bit/s), rounded
// down: the inverse of BufferTicks for reading a class back.
func BufferBytes(rate uint64, ticks uint32) uint32 {
	b := uint64(ticks) * rate / 125_000_000
	if b > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(b)
}

// checkBuffer reports a rate too low for its bucket: the kernel could not
// hold size bytes of it. field names the rate's key; f is the flow (nil:
// the policy).
func (p *problems) checkBuffer(f *shaper.Flow, field, bucket string, rate uint64, size uint32) bool {
	if rate == 0 {
		return true
	}
	if _, ok := BufferTicks(rate, size); ok {
		return true
	}
	min := (uint64(size)*125_000_000 + MaxBufferTicks - 1) / MaxBufferTicks
	p.report(shaper.Error, shaper.BadRate, f, field, "rate %s too low for a %s %s: the kernel holds at most %.0f s of a class's rate (use at least %s, or a smaller %s)",
		shaper.FormatRate(rate), shaper.FormatSize(size), bucket, float64(MaxBufferTicks)*TickNs/1e9, shaper.FormatRate(min), bucket)
	return false
}

// sizeLimits are the largest values the kernel's fields take.
const (
	// MaxQuantum is HTB's quantum, an int in the kernel.
	MaxQuantum = math.MaxInt32
	// MaxFrameLimit bounds max_frame: a GSO packet of BIG TCP's size.
	MaxFrameLimit = 256 << 10
)
