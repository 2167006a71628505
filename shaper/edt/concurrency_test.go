package edt

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Two CPUs pacing one flow and one session at once lose no clock advance:
// with every packet behind the clock, after P more packets each clock
// stands exactly P slots further. A read-then-write without the
// locks would let two packets take one slot.
func TestConcurrentClocks(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	p := loadForTest(t, testOptions())
	const rate = 1_000_000 // 8 ms a packet: far behind the clock all along
	if err := p.AddSession(1, rate); err != nil {
		t.Fatal(err)
	}
	if err := p.AddFlow(1, FlowSpec{Marks: []uint32{1}, Session: 1, MBR: rate, DelayBudget: 100 * time.Hour, Class: classNonGBR}); err != nil {
		t.Fatal(err)
	}
	// Prime: 1000 packets put the clock 8 s ahead, so that every packet
	// below finds it ahead of now even if a thread starts late.
	if _, err := p.Program().Run(&ebpf.RunOptions{Data: frame(1000), Context: newCtx(1, 0)[:], Repeat: 1000}); err != nil {
		t.Skipf("kernel refuses BPF_PROG_TEST_RUN: %v", err)
	}
	primed, err := p.Flow(1)
	if err != nil {
		t.Fatal(err)
	}

	const perCPU, repeat = 20, 5000
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for cpu := 0; cpu < 2; cpu++ {
		wg.Add(1)
		go func(cpu int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errs <- err
				return
			}
			data, in := frame(1000), newCtx(1, 0)
			for i := 0; i < perCPU; i++ {
				if _, err := p.Program().Run(&ebpf.RunOptions{Data: data, Context: in[:], Repeat: repeat}); err != nil {
					errs <- err
					return
				}
			}
		}(cpu)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, ebpf.ErrNotSupported) {
			t.Skipf("kernel refuses: %v", err)
		}
		t.Fatal(err)
	}
	st, err := p.Flow(1)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel may run the program more often than asked (a run cut
	// short by a signal is run again): count what ran.
	n := st.Packets - primed.Packets
	want := primed.MBRClock + n*txNs(1000, rate)
	if n < 2*perCPU*repeat || st.MBRClock != want {
		t.Errorf("flow: %d packets ran, clock %d; want >= %d packets, clock %d (%d slots apart)", n, st.MBRClock, 2*perCPU*repeat, want, (int64(want)-int64(st.MBRClock))/int64(txNs(1000, rate)))
	}
	if clock, err := p.SessionClock(1); err != nil || clock != want {
		t.Errorf("session clock %d (%v), want %d", clock, err, want)
	}
}
