package gtpu

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// Verdicts of a clsact direct-action program.
const (
	actUnspec = 0xffffffff // TC_ACT_UNSPEC (-1): untouched, next filter runs
	actOK     = 0          // TC_ACT_OK: classified
)

// skbCtx is struct __sk_buff as BPF_PROG_TEST_RUN reads and writes it.
// Only mark (offset 8) and priority (offset 32) matter here.
type skbCtx [192]byte

func (c *skbCtx) mark() uint32     { return binary.NativeEndian.Uint32(c[8:]) }
func (c *skbCtx) priority() uint32 { return binary.NativeEndian.Uint32(c[32:]) }

// newCtx returns a context with mark and priority preset, so a test can
// tell "left alone" from "set".
func newCtx(mark, prio uint32) *skbCtx {
	c := &skbCtx{}
	binary.NativeEndian.PutUint32(c[8:], mark)
	binary.NativeEndian.PutUint32(c[32:], prio)
	return c
}

// loadForTest loads the objects or skips when the kernel will not let it.
func loadForTest(tb testing.TB) *Objects {
	tb.Helper()
	testenv.RequireRoot(tb)
	o, err := Load(LoadOptions{})
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, ebpf.ErrNotSupported) {
			tb.Skipf("kernel refuses to load BPF programs: %v", err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() { o.Close() })
	return o
}

// run feeds data through prog with BPF_PROG_TEST_RUN and returns the
// verdict and the context after the run.
func run(tb testing.TB, prog *ebpf.Program, data []byte, in *skbCtx, repeat uint32) (uint32, *skbCtx) {
	tb.Helper()
	out := &skbCtx{}
	ret, err := prog.Run(&ebpf.RunOptions{Data: data, Context: in[:], ContextOut: out[:], Repeat: repeat})
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, os.ErrPermission) {
			tb.Skipf("kernel refuses BPF_PROG_TEST_RUN for sched_cls: %v", err)
		}
		tb.Fatalf("BPF_PROG_TEST_RUN: %v", err)
	}
	return ret, out
}
