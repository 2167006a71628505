package main

import (
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// edtUDP opens a UDP socket at addr inside ns; mark > 0 sets SO_MARK (the
// mark gtp5g would give the flow's packets), rxStamps asks the kernel for
// each datagram's arrival time.
func edtUDP(t *testing.T, ns *testenv.NetNS, addr string, mark int, rxStamps bool) *net.UDPConn {
	var c *net.UDPConn
	ns.Do(t, func() {
		a, err := net.ResolveUDPAddr("udp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		if c, err = net.ListenUDP("udp4", a); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { c.Close() })
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.Control(func(fd uintptr) {
		if mark > 0 {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, mark)
		}
		if err == nil && rxStamps {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// edtPayload makes 1000-byte IP packets (what the flows' rates count).
const edtPayload = 1000 - 28

// sendAt sends edtPayload datagrams to `to` at rate bit/s (in IP bytes)
// until stop, catching up after a stall, and returns how many it sent and
// its longest stall (a loaded guest can hold the sender back).
func sendAt(c *net.UDPConn, to *net.UDPAddr, rate float64, start, stop time.Time) (sent int, stall time.Duration) {
	buf := make([]byte, edtPayload)
	last := start
	for now := time.Now(); now.Before(stop); now = time.Now() {
		stall, last = max(stall, now.Sub(last)), now
		due := int(now.Sub(start).Seconds() * rate / 8000)
		for ; sent < due; sent++ {
			if _, err := c.WriteToUDP(buf, to); err != nil && !isNoBufs(err) {
				return sent, stall
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return sent, stall
}

func isNoBufs(err error) bool { return strings.Contains(err.Error(), syscall.ENOBUFS.Error()) }

// arrivals reads datagrams until no more come for a second and returns
// their kernel arrival times.
func arrivals(t *testing.T, c *net.UDPConn) []time.Time {
	var out []time.Time
	readStamped(t, c, func(_ []byte, at time.Time) { out = append(out, at) })
	return out
}

// readStamped reads datagrams until no more come for a second, handing
// each payload and its kernel arrival time to each; a datagram without
// its arrival time fails the test and ends the reading.
func readStamped(t *testing.T, c *net.UDPConn, each func(payload []byte, at time.Time)) {
	buf, oob := make([]byte, 2048), make([]byte, 128)
	for {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		n, oobn, _, _, err := c.ReadMsgUDP(buf, oob)
		if err != nil {
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) == 0 || len(msgs[0].Data) < 16 {
			t.Errorf("no arrival time on a datagram (%v)", err)
			return
		}
		ts := *(*unix.Timespec)(unsafePointer(msgs[0].Data))
		each(buf[:n], time.Unix(ts.Unix()))
	}
}

// within counts the arrivals in [from, to).
func within(ts []time.Time, from, to time.Time) int {
	n := 0
	for _, x := range ts {
		if !x.Before(from) && x.Before(to) {
			n++
		}
	}
	return n
}

// On a kernel with sch_fq (the Debian 6.1 VM: GTPQOS_VM=1 go test -run
// TestVMEdtBackend ./tests/vm/): `gtpqos apply` with backend edt paces
// two flows of one session through the fixed tree. Sent above their
// limits (A at 3 Mbit/s against its 1 Mbit/s MBR, B at 5 Mbit/s against
// 4 Mbit/s, both under a 3 Mbit/s AMBR), each flow arrives at most at its
// MBR + 1% in user IP bytes and the two together at most at the AMBR +
// 1%; a second apply writes nothing; verify sees both flows counting;
// reset leaves no qdisc, filter or pin of ours.
func TestIntegrationEdtPacesFlows(t *testing.T) {
	testenv.SkipShort(t)
	p := newEdtPair(t)
	if !p.hasFq(t) {
		t.Skip("needs sch_fq (the Debian VM has it, this kernel has not: TestIntegrationApplyEdtRefusesWithoutFq runs instead)")
	}
	file, locks := writeEdtFlows(t), t.TempDir()
	if rc, out, errs := runIn(t, p.a, "apply", "-f", file, "--dev", p.devA, "--lock-dir", locks); rc != 0 {
		t.Fatalf("apply: rc %d\n%s%s", rc, out, errs)
	}
	t.Logf("tree after apply:\n%s", p.dump(t))
	if rc, out, errs := runIn(t, p.a, "apply", "-f", file, "--dev", p.devA, "--lock-dir", locks); rc != 0 || !strings.Contains(out, "; 0 writes") {
		t.Errorf("second apply: rc %d, want 0 writes:\n%s%s", rc, out, errs)
	}
	rates := edtRun(t, p, func() {
		rc, out, errs := runIn(t, p.a, "verify", "--dev", p.devA, "--interval", "1s")
		if rc != 0 || !strings.Contains(out, "2 flow classes, 2 counting") {
			t.Errorf("verify while sending: rc %d, want both flows counting:\n%s%s", rc, out, errs)
		}
	})
	const mbrA, mbrB, ambr = 1e6, 4e6, 3e6
	t.Logf("arrival rates (user IP bytes): A %.3f Mbit/s (MBR 1), B %.3f Mbit/s (MBR 4), session %.3f Mbit/s (AMBR 3); offered A %.2f, B %.2f",
		rates.a/1e6, rates.b/1e6, (rates.a+rates.b)/1e6, rates.sentA/1e6, rates.sentB/1e6)
	if rates.a > mbrA*1.01 || rates.b > mbrB*1.01 || rates.a+rates.b > ambr*1.01 {
		t.Errorf("above the contract: A %.0f (MBR %.0f), B %.0f (MBR %.0f), A+B %.0f (AMBR %.0f) bit/s", rates.a, mbrA, rates.b, mbrB, rates.a+rates.b, ambr)
	}
	t.Logf("after the run:\n%s", p.a.Run(t, "tc", "-s", "qdisc", "show", "dev", p.devA))
	// What passes must be paced traffic, not a trickle. The floor is loose:
	// a guest that stalls the senders longer than a clock's idle credit
	// (32 KiB: 262 ms at A's MBR, 87 ms at the AMBR) loses the rest of the
	// stall, so only half is required.
	if rates.a < 0.5*mbrA || rates.a+rates.b < 0.5*ambr {
		t.Errorf("too little passed: A %.0f, A+B %.0f bit/s; want at least half the MBR and the AMBR", rates.a, rates.a+rates.b)
	}
	rc, out, errs := runIn(t, p.a, "reset", "--dev", p.devA, "--lock-dir", locks)
	if rc != 0 || !strings.Contains(out, "removed tree 6765:") || !strings.Contains(out, "pins") {
		t.Errorf("reset: rc %d:\n%s%s", rc, out, errs)
	}
	if d := p.dump(t); strings.Contains(d, "6765:") || strings.Contains(d, "clsact") || strings.Contains(d, "gtpqos") {
		t.Errorf("after reset the device holds:\n%s", d)
	}
	p.pinsGone(t)
}

type edtRates struct{ a, b, sentA, sentB float64 }

// edtRun sends both flows for 6 s (during calls during()), and returns
// their arrival rates over seconds 1.5-5.5 and the rates sent.
func edtRun(t *testing.T, p edtPair, during func()) edtRates {
	rxA := edtUDP(t, p.b, "10.98.0.2:7201", 0, true)
	rxB := edtUDP(t, p.b, "10.98.0.2:7202", 0, true)
	txA := edtUDP(t, p.a, "10.98.0.1:0", 0x10, false)
	txB := edtUDP(t, p.a, "10.98.0.1:0", 0x20, false)
	start := time.Now()
	stop := start.Add(6 * time.Second)
	var wg sync.WaitGroup
	var tsA, tsB []time.Time
	var nA, nB int
	var stallA, stallB time.Duration
	wg.Add(4)
	go func() { defer wg.Done(); tsA = arrivals(t, rxA) }()
	go func() { defer wg.Done(); tsB = arrivals(t, rxB) }()
	go func() { defer wg.Done(); nA, stallA = sendAt(txA, rxA.LocalAddr().(*net.UDPAddr), 3e6, start, stop) }()
	go func() { defer wg.Done(); nB, stallB = sendAt(txB, rxB.LocalAddr().(*net.UDPAddr), 5e6, start, stop) }()
	time.Sleep(2 * time.Second)
	during()
	wg.Wait()
	from, to := start.Add(1500*time.Millisecond), start.Add(5500*time.Millisecond)
	secs := to.Sub(from).Seconds()
	bits := func(n int) float64 { return float64(n) * 8000 / secs }
	t.Logf("senders' longest stall: A %v, B %v (the pacer gives a stalled session's time to no one)", stallA, stallB)
	return edtRates{a: bits(within(tsA, from, to)), b: bits(within(tsB, from, to)),
		sentA: float64(nA) * 8000 / 6, sentB: float64(nB) * 8000 / 6}
}

// unsafePointer points at a control message's payload (a struct timespec).
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
