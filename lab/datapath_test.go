package lab

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// newTestLab builds a lab and removes it when the test ends, checking that
// the namespaces are gone.
func newTestLab(t *testing.T, cfg Config) *Lab {
	t.Helper()
	testenv.RequireRoot(t)
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	names := l.Namespaces()
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close lab: %v", err)
		}
		for _, n := range names {
			if _, err := os.Stat("/run/netns/" + n); err == nil {
				t.Errorf("netns %s still exists after Close", n)
			}
		}
	})
	return l
}

func TestLabDatapathUDPUnshaped(t *testing.T) {
	testenv.SkipShort(t)
	l := newTestLab(t, Config{RateScale: 1})
	res, err := l.Run(context.Background(), TrafficSpec{Duration: 3 * time.Second, Offered: 5e6})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	cs := l.UPFCounters()
	for i, f := range res {
		var got float64
		for _, iv := range f.Intervals[1:] {
			got += iv.Mbps
		}
		got /= float64(len(f.Intervals) - 1)
		if got < 4.8 || got > 5.2 {
			t.Errorf("flow %s: unshaped goodput %.3f Mbit/s, want ~5 (intervals %+v)", f.Name, got, f.Intervals)
		}
		if cs[i].Packets == 0 || cs[i].Bytes/cs[i].Packets != 1272 {
			t.Errorf("flow %s: upf sent %d packets, %d bytes: want 1272-byte outer IP packets", f.Name, cs[i].Packets, cs[i].Bytes)
		}
		if f.Received+5 < f.Sent {
			t.Errorf("flow %s: sent %d received %d with no bottleneck", f.Name, f.Sent, f.Received)
		}
	}
	if ok, bad := l.Delivered(); ok == 0 || bad != 0 {
		t.Errorf("gnb delivered %d, rejected %d", ok, bad)
	}
}

func TestLabN3SocketMarks(t *testing.T) {
	testenv.SkipShort(t)
	// Each flow leaves from a socket whose SO_MARK is the flow's mark; with
	// NoMarks (stock gtp5g) every flow leaves with mark 0.
	for _, noMarks := range []bool{false, true} {
		l := newTestLab(t, Config{RateScale: 1, NoMarks: noMarks})
		for i, p := range l.PDRs() {
			rc, err := l.upf.connOf[i].SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var mark int
			var gerr error
			_ = rc.Control(func(fd uintptr) { mark, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK) })
			want := int(p.Mark)
			if noMarks {
				want = 0
			}
			if gerr != nil || mark != want {
				t.Errorf("noMarks=%v flow %s: SO_MARK %d (%v), want %d", noMarks, p.Name, mark, gerr, want)
			}
		}
	}
}

func TestLabIperf3(t *testing.T) {
	testenv.SkipShort(t)
	testenv.RequireCmd(t, "iperf3")
	l := newTestLab(t, Config{RateScale: 1})
	res, err := l.Run(context.Background(), TrafficSpec{Duration: 3 * time.Second, Offered: 4e6, Generator: TrafficIperf3})
	if err != nil {
		t.Fatal(err)
	}
	// iperf3 paces itself and is scheduled like any process: judge the
	// whole run (at least 70% of the offered bytes arrived), not a second.
	for _, f := range res {
		var bytes uint64
		for _, iv := range f.Intervals {
			bytes += iv.Bytes
		}
		if want := uint64(4e6 / 8 * 3); bytes < want*7/10 || bytes > want*11/10 {
			t.Errorf("flow %s: iperf3 received %d bytes in 3 s, want ~%d (intervals %+v)", f.Name, bytes, want, f.Intervals)
		}
	}
	out, _ := exec.Command("pgrep", "-a", "iperf3").Output()
	for _, line := range strings.Split(string(out), "\n") {
		for _, p := range l.PDRs() {
			if strings.Contains(line, p.DN.Addr().String()) && strings.Contains(line, "-s") {
				t.Errorf("iperf3 server left running: %s", line)
			}
		}
	}
}
