package edt

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// Verdicts of a clsact direct-action program.
const (
	actOK   = 0 // TC_ACT_OK
	actShot = 2 // TC_ACT_SHOT
)

// testOverhead is N3's encapsulation on Ethernet with IPv4: what the test
// packets carry in front of (and count besides) the user's packet.
const testOverhead = 58

// skbCtx is struct __sk_buff as BPF_PROG_TEST_RUN reads and writes it.
// The kernel hands back mark, priority, cb and tstamp, not hash: the
// program's test-only echo copies the hash it set into cb[0].
type skbCtx [192]byte

func (c *skbCtx) priority() uint32   { return binary.NativeEndian.Uint32(c[32:]) }
func (c *skbCtx) cb(i int) uint32    { return binary.NativeEndian.Uint32(c[48+4*i:]) }
func (c *skbCtx) tstamp() uint64     { return binary.NativeEndian.Uint64(c[152:]) }
func (c *skbCtx) setTstamp(t uint64) { binary.NativeEndian.PutUint64(c[152:], t) }

func newCtx(mark, prio uint32) *skbCtx {
	c := &skbCtx{}
	binary.NativeEndian.PutUint32(c[8:], mark)
	binary.NativeEndian.PutUint32(c[32:], prio)
	return c
}

// frame returns a frame whose user packet is user bytes behind
// testOverhead bytes of encapsulation; the Ethernet type is IPv4, so the
// kernel gives the skb protocol ETH_P_IP (bpf_skb_set_tstamp wants it).
func frame(user int) []byte {
	b := make([]byte, testOverhead+user)
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	b[14] = 0x45
	return b
}

// small map sizes keep the tests' kernel memory low.
func testOptions() LoadOptions {
	return LoadOptions{Sessions: 1024, Flows: 1024, Marks: 1024, Keys: 1024, Rules: 1024, Overhead: testOverhead, echo: true}
}

// loadForTest loads a pacer or skips when the kernel will not let it.
func loadForTest(tb testing.TB, opts LoadOptions) *Pacer {
	tb.Helper()
	testenv.RequireRoot(tb)
	p, err := Load(opts)
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, ebpf.ErrNotSupported) {
			tb.Skipf("kernel refuses to load BPF programs: %v", err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// run feeds one frame with mark through the program.
func run(tb testing.TB, p *Pacer, mark uint32, data []byte) (uint32, *skbCtx) {
	tb.Helper()
	return runCtx(tb, p, newCtx(mark, 0), data)
}

func runCtx(tb testing.TB, p *Pacer, in *skbCtx, data []byte) (uint32, *skbCtx) {
	tb.Helper()
	out := &skbCtx{}
	ret, err := p.Program().Run(&ebpf.RunOptions{Data: data, Context: in[:], ContextOut: out[:]})
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, os.ErrPermission) {
			tb.Skipf("kernel refuses BPF_PROG_TEST_RUN for sched_cls: %v", err)
		}
		tb.Fatalf("BPF_PROG_TEST_RUN: %v", err)
	}
	return ret, out
}

// monoNow is CLOCK_MONOTONIC in ns: the clock bpf_ktime_get_ns reads and
// fq compares skb->tstamp with.
func monoNow(tb testing.TB) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		tb.Fatal(err)
	}
	return uint64(ts.Nano())
}

// txNs is the time user bytes take at bps (the program's arithmetic).
func txNs(user int, bps uint64) uint64 { return uint64(user) * 8 * 1e9 / bps }
