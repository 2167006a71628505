package edt

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// testRunAttr is union bpf_attr's test member (BPF_PROG_TEST_RUN).
type testRunAttr struct {
	progFD      uint32
	retval      uint32
	dataSizeIn  uint32
	dataSizeOut uint32
	dataIn      uint64
	dataOut     uint64
	repeat      uint32
	duration    uint32
	ctxSizeIn   uint32
	ctxSizeOut  uint32
	ctxIn       uint64
	ctxOut      uint64
	flags       uint32
	cpu         uint32
	batchSize   uint32
	_           uint32
}

// kernelTimed runs the program repeat times with BPF_PROG_TEST_RUN and
// returns the verdict and the kernel's mean time per run, which leaves out
// the time the test thread was preempted (bpf_test_timer stops its clock
// around rescheduling): the number that means something on a loaded host.
// cilium/ebpf's Program.Benchmark takes no context, so no mark.
func kernelTimed(p *Pacer, data []byte, ctx *skbCtx, repeat uint32) (uint32, time.Duration, error) {
	attr := testRunAttr{
		progFD:     uint32(p.Program().FD()),
		dataSizeIn: uint32(len(data)),
		dataIn:     uint64(uintptr(unsafe.Pointer(&data[0]))),
		repeat:     repeat,
		ctxSizeIn:  uint32(len(ctx)),
		ctxIn:      uint64(uintptr(unsafe.Pointer(&ctx[0]))),
	}
	_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_TEST_RUN, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(data)
	runtime.KeepAlive(ctx)
	if errno != 0 {
		return 0, 0, fmt.Errorf("BPF_PROG_TEST_RUN: %w", errno)
	}
	return attr.retval, time.Duration(attr.duration), nil
}
