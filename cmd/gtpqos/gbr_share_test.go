package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// gbrShareFlow is one flow of the GBR-share scenario: its contract
// (bit/s, 0: none), the rate its sender offers and its mark.
type gbrShareFlow struct {
	name           string
	gbr, mbr, sent float64
	mark           int
	packet         int // IP bytes a datagram
}

// gbrShareFlows: two greedy GBR flows with different GBRs and MBRs next to
// two greedy best-effort flows, 12.5 Mbit/s offered on an 8 Mbit/s link
// (rates scaled to what a loaded TCG guest forwards). The GBRs add up to
// 6; the non-GBR class's 1.9 Mbit/s is shared among four flows, so each
// GBR flow's fair excess is below its MBR − GBR and the GBR binds. A's
// packets are small enough that its GBR alone is more than fq's default
// flow limit of 100 packets in a 100 ms horizon (112); the others' are
// larger, to spare the guest's CPU.
var gbrShareFlows = []gbrShareFlow{
	{name: "A", gbr: 4.5e6, mbr: 5.5e6, sent: 6e6, mark: 0x10, packet: 500},
	{name: "B", gbr: 1.5e6, mbr: 3e6, sent: 3.5e6, mark: 0x20, packet: 1000},
	{name: "C1", mbr: 8e6, sent: 1.5e6, mark: 0x30, packet: 1000},
	{name: "C2", mbr: 8e6, sent: 1.5e6, mark: 0x40, packet: 1000},
}

// gbrShareFile is the flows file of the scenario for a backend.
func gbrShareFile(t *testing.T, backend string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "link: 8mbit\npolicy:\n  backend: %s\n  overhead: 14\n  delay_budget: 100ms\n  non_gbr_min: 100kbit\n  default_rate: 100kbit\nflows:\n", backend)
	for i, f := range gbrShareFlows {
		fmt.Fprintf(&b, "  - {name: %s, seid: %d, qer: 1, qfi: 9, gbr: %.0f, mbr: %.0f, mark: %#x}\n", f.name, i+1, f.gbr, f.mbr, f.mark)
	}
	path := filepath.Join(t.TempDir(), backend+".yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// On a kernel with sch_fq (GTPQOS_VM=1 GTPQOS_VM_KERNEL=6.12 go test -run
// TestVMEdtGBRShares ./tests/vm/): under congestion, with every flow
// greedy, each GBR flow arrives at its GBR − 1% or more (in user IP
// bytes) times the share of the link the guest carried in the window (a
// stalled guest loses link time for every flow), for the edt backend and,
// as the reference, the HTB backend's class per flow; no flow above its
// MBR + 1%; the edt tree's guaranteed class drops nothing. A flow's rate
// is the datagrams that arrived in a window of the receiver's kernel
// timestamps, bounded by one datagram at each edge. The guest's stalls (a
// ticker that did not run for more than 20 ms) are logged with the rates,
// and so is each flow's reordering: datagrams that arrived after one sent
// later.
func TestIntegrationGBRShares(t *testing.T) {
	testenv.SkipShort(t)
	for _, backend := range []string{"edt", "htb"} {
		t.Run(backend, func(t *testing.T) {
			p := newEdtPair(t)
			if !p.hasFq(t) {
				t.Skip("needs sch_fq (the Debian VM has it)")
			}
			locks := t.TempDir()
			if rc, out, errs := runIn(t, p.a, "apply", "-f", gbrShareFile(t, backend), "--dev", p.devA, "--lock-dir", locks); rc != 0 {
				t.Fatalf("apply: rc %d\n%s%s", rc, out, errs)
			}
			res := gbrShareRun(t, p)
			qdiscs := p.a.Run(t, "tc", "-s", "qdisc", "show", "dev", p.devA)
			t.Logf("tree after the run:\n%s%s", qdiscs, p.a.Run(t, "tc", "-s", "class", "show", "dev", p.devA))
			judgeGBRShares(t, backend, res)
			if backend == "edt" {
				// The guaranteed class is never congested: its leaf must
				// drop nothing (fq's default flow limit did).
				if d, ok := fqDrops(qdiscs, "6765:10"); !ok || d != 0 {
					t.Errorf("edt: the guaranteed class's fq leaf dropped %d packets (leaf found: %v)", d, ok)
				}
			}
			if rc, out, errs := runIn(t, p.a, "reset", "--dev", p.devA, "--lock-dir", locks); rc != 0 {
				t.Errorf("reset: rc %d:\n%s%s", rc, out, errs)
			}
		})
	}
}

// judgeGBRShares logs each flow's rate and reordering (lines marked
// GBRSHARE) and holds them to their contracts.
func judgeGBRShares(t *testing.T, backend string, res gbrShareResult) {
	t.Helper()
	var total float64
	for _, f := range gbrShareFlows {
		r := res.flows[f.name]
		total += r.lo
		t.Logf("GBRSHARE %s flow %s: %.3f–%.3f Mbit/s arrived (GBR %.1f, MBR %.1f, offered %.1f, sent %.3f), reordered %d of %d",
			backend, f.name, r.lo/1e6, r.hi/1e6, f.gbr/1e6, f.mbr/1e6, f.sent/1e6, r.sent/1e6, r.reordered, r.n)
	}
	t.Logf("GBRSHARE %s total ≥ %.3f Mbit/s of the 8 Mbit/s link; guest stalls over 20 ms in the window: %d, %v in all (longest %v)",
		backend, total/1e6, res.stalls, res.stalled, res.longest)
	// A guest that stalls loses link time for every flow: the link was
	// backlogged throughout, so what it did not carry is time the guest
	// did not run, and each GBR is judged at that share.
	share := min(total/8e6, 1)
	for _, f := range gbrShareFlows {
		r := res.flows[f.name]
		if f.mbr > 0 && r.hi > f.mbr*1.01 {
			t.Errorf("%s: flow %s arrived at %.3f–%.3f Mbit/s, above MBR %.1f + 1%%", backend, f.name, r.lo/1e6, r.hi/1e6, f.mbr/1e6)
		}
		if f.gbr > 0 && r.lo < f.gbr*share*0.99 {
			t.Errorf("%s: GBR flow %s arrived at %.3f–%.3f Mbit/s, below GBR %.1f × %.3f (the link's share the guest ran) − 1%%",
				backend, f.name, r.lo/1e6, r.hi/1e6, f.gbr/1e6, share)
		}
	}
}

// gbrFlowRate is one flow's arrivals in the window: bounds of its rate
// (user IP bit/s), datagrams, reordered datagrams, and the rate sent.
type gbrFlowRate struct {
	lo, hi, sent float64
	n, reordered int
}

type gbrShareResult struct {
	flows   map[string]gbrFlowRate
	stalls  int
	stalled time.Duration
	longest time.Duration
}

// gbrShareRun sends every flow for 9 s and measures seconds 3-8.
func gbrShareRun(t *testing.T, p edtPair) gbrShareResult {
	const secs = 9
	start := time.Now()
	stop := start.Add(secs * time.Second)
	from, to := start.Add(3*time.Second), start.Add(8*time.Second)
	var wg sync.WaitGroup
	arr := make([][]gbrArrival, len(gbrShareFlows))
	sent := make([]int, len(gbrShareFlows))
	for i, f := range gbrShareFlows {
		rx := edtUDP(t, p.b, fmt.Sprintf("10.98.0.2:%d", 7300+i), 0, true)
		tx := edtUDP(t, p.a, "10.98.0.1:0", f.mark, false)
		bigBuffers(t, rx, unix.SO_RCVBUFFORCE)
		bigBuffers(t, tx, unix.SO_SNDBUFFORCE)
		wg.Add(2)
		go func() { defer wg.Done(); arr[i] = gbrArrivals(t, rx) }()
		go func() {
			defer wg.Done()
			sent[i] = gbrSend(tx, rx.LocalAddr().(*net.UDPAddr), f.sent, f.packet, start, stop)
		}()
	}
	res := gbrShareResult{flows: map[string]gbrFlowRate{}}
	gaps := stallTicker(stop)
	wg.Wait()
	for _, g := range <-gaps {
		if g.at.After(from) && g.at.Before(to) {
			res.stalls++
			res.stalled += g.d
			res.longest = max(res.longest, g.d)
		}
	}
	w := to.Sub(from).Seconds()
	for i, f := range gbrShareFlows {
		n, re := 0, 0
		for _, a := range arr[i] {
			if !a.at.Before(from) && a.at.Before(to) {
				n++
				if a.late {
					re++
				}
			}
		}
		// One datagram at each edge of the window may belong to either side.
		bits := float64(8 * f.packet)
		res.flows[f.name] = gbrFlowRate{lo: float64(max(n-1, 0)) * bits / w, hi: float64(n+1) * bits / w,
			sent: float64(sent[i]) * bits / secs, n: n, reordered: re}
	}
	return res
}

// gbrSend sends datagrams of size IP bytes carrying a sequence number to
// `to` at rate bit/s (IP bytes) until stop, catching up after a stall.
func gbrSend(c *net.UDPConn, to *net.UDPAddr, rate float64, size int, start, stop time.Time) int {
	buf := make([]byte, size-28)
	sent := 0
	for now := time.Now(); now.Before(stop); now = time.Now() {
		due := int(now.Sub(start).Seconds() * rate / float64(8*size))
		for ; sent < due; sent++ {
			binary.BigEndian.PutUint64(buf, uint64(sent))
			if _, err := c.WriteToUDP(buf, to); err != nil && !isNoBufs(err) {
				return sent
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return sent
}

// gbrArrival is a datagram's kernel arrival time; late: one sent after it
// arrived before it.
type gbrArrival struct {
	at   time.Time
	late bool
}

// gbrArrivals reads sequence-numbered datagrams until none comes for a
// second.
func gbrArrivals(t *testing.T, c *net.UDPConn) []gbrArrival {
	var out []gbrArrival
	var highest uint64
	seen := false
	readStamped(t, c, func(payload []byte, at time.Time) {
		if len(payload) < 8 {
			t.Errorf("a datagram of %d bytes carries no sequence number", len(payload))
			return
		}
		seq := binary.BigEndian.Uint64(payload)
		late := seen && seq < highest
		if !late {
			highest, seen = seq, true
		}
		out = append(out, gbrArrival{at: at, late: late})
	})
	return out
}

type stallGap struct {
	at time.Time
	d  time.Duration
}

// stallTicker wakes every millisecond until stop and reports the gaps
// over 20 ms between wake-ups: time the guest did not run it.
func stallTicker(stop time.Time) <-chan []stallGap {
	out := make(chan []stallGap, 1)
	go func() {
		var gaps []stallGap
		last := time.Now()
		for now := last; now.Before(stop); now = time.Now() {
			if d := now.Sub(last); d > 20*time.Millisecond {
				gaps = append(gaps, stallGap{at: now, d: d})
			}
			last = now
			time.Sleep(time.Millisecond)
		}
		sort.Slice(gaps, func(i, j int) bool { return gaps[i].d > gaps[j].d })
		out <- gaps
	}()
	return out
}

// bigBuffers gives c a 16 MiB socket buffer (opt: SO_SNDBUFFORCE or
// SO_RCVBUFFORCE): a sender whose packets wait in fq then does not block
// on its own buffer, as a UPF's forwarded packets hold no socket, and the
// receiver drops nothing.
func bigBuffers(t *testing.T, c *net.UDPConn, opt int) {
	raw, err := c.SyscallConn()
	if err == nil {
		_ = raw.Control(func(fd uintptr) { err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, 16<<20) })
	}
	if err != nil {
		t.Fatal(err)
	}
}

// fqDrops is the drop count of the fq qdisc under parent in a
// `tc -s qdisc show` listing; ok false: there is none.
func fqDrops(listing, parent string) (n int, ok bool) {
	m := regexp.MustCompile(`qdisc fq \S+ parent ` + regexp.QuoteMeta(parent) + ` [^\n]*\n\s*Sent \d+ bytes \d+ pkt \(dropped (\d+)`).FindStringSubmatch(listing)
	if m == nil {
		return 0, false
	}
	n, _ = strconv.Atoi(m[1])
	return n, true
}
