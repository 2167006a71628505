package vm

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/lab/ab"
)

// TestVMGtp5gABBess boots the Debian kernel (GTPQOS_VM_KERNEL picks 6.1
// or 6.12) with $GTP5G_KO and sch_fq, and runs TestGtp5gGuestABBess (the
// MBR cases of BESS's QoS tests, 'gtpqos ab --backend htb,edt') and
// TestGtp5gGuestABBessTCP (TCP through MBRs under each backend in turn)
// on the real gtp5g datapath.
func TestVMGtp5gABBess(t *testing.T) {
	runGtp5gABGuests(t, "ABBESS", 6*time.Minute, "TestGtp5gGuestABBess", "TestGtp5gGuestABBessTCP")
}

// bessMBR is the MBR of both flows of the BESS MBR cases in Mbit/s of
// user IP packets (15 Mbit/s, ab.MBRScenarioMBR, at abScale), on a link
// twice their sum so that only the MBRs limit them.
const bessMBR = ab.MBRScenarioMBR / 1e6 * abScale

// bessOffer is each flow's offered rate as a multiple of its MBR.
var bessOffer = map[string]float64{"A": 2, "B": 0.99}

// bessBudget is the MBR cases' delay budget, the lab's for rate
// experiments (abRateBudget, 500 ms). A flow's packets wait up to it in
// either backend's queue, so it must outlast the guest's stalls (TCG: up
// to 200 ms seen) or B, offered 0.99 × its MBR, loses the backlog a stall
// leaves. Under edt a non-GBR flow backlogged at its MBR would have a
// whole budget of packets scheduled ahead in the non-GBR fq leaf, 191 of
// A's at 500 ms, where fq keeps 100 of a flow: the program keeps no more
// than edt.DefaultFlowAhead of them ahead, so A loses its excess only.
const bessBudget = abRateBudget

// bessTCPBudget is the TCP case's delay budget: 200 ms, under which edt's
// retransmits stayed below htb's in every run. (When the program's bound
// on packets ahead counted each packet by its own size, TCP's small
// packets behind its large ones were dropped: 1,253 retransmits under edt
// against htb's 280, at this budget and at 500 ms alike.)
const bessTCPBudget = "  delay_budget: 200ms\n"

// bessArmYAML is the arm of the MBR cases: A and B non-GBR flows of
// session 1 with MBR bessMBR each, on a link of 4 × bessMBR, with
// bessBudget and, under htb, FIFO leaves sized by it (the budget's
// meaning: fq_codel, htb's default leaf, drops what waits above its 5 ms
// target for 100 ms, which a stall of the guest makes B's packets do).
func bessArmYAML() string {
	return fmt.Sprintf(`link: %gmbit
policy:
  mode: aware
%s  htb:
    leaf: fifo
flows:
  - {name: A, seid: 1, qer: 1, qfi: 2, direction: downlink, gbr: 0, mbr: %gmbit, mark: 2}
  - {name: B, seid: 1, qer: 2, qfi: 3, direction: downlink, gbr: 0, mbr: %gmbit, mark: 3}
`, 4*bessMBR, bessBudget, bessMBR, bessMBR)
}

// TestGtp5gGuestABBess runs the MBR cases of BESS's QoS tests on the real
// gtp5g datapath under both backends in one 'gtpqos ab --dev n3 --backend
// htb,edt' run (gtp5g's native policer off): flow A offered 2 × its MBR
// must lose 50% ±1% of what it sent (it arrives at its MBR), flow B
// offered 0.99 × its MBR must lose nothing.
//
// The test's own senders number their datagrams (paceSeq) and the UE's
// receivers record the numbers, so a flow's loss over ab's window is
// exact: of the datagrams sent in the window (the senders' counters
// sampled every 20 ms), the share that never arrived, whenever it arrived.
// A loss of B is logged with the send time of each lost datagram, the
// longest gap between two of the sampler's 20 ms ticks around it (a stall
// of the guest), the backlog drops of the guest's softnet queues over the
// window and the shaper's own drops for the flow, so what dropped it is on
// record.
func TestGtp5gGuestABBess(t *testing.T) {
	requireGtp5gGuest(t)
	gtpqos, l := startGtp5gAB(t, abScale)
	arm := filepath.Join(t.TempDir(), "mbr.yaml")
	if err := os.WriteFile(arm, []byte(bessArmYAML()), 0o644); err != nil {
		t.Fatal(err)
	}
	// The UE's receivers must not drop what the link carried: a TCG stall
	// of their goroutines overflows a default socket buffer.
	if err := os.WriteFile("/proc/sys/net/core/rmem_max", []byte("33554432\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flows := map[string]*bessFlow{"A": {rx: l.ueA, tx: l.sA}, "B": {rx: l.ueB, tx: l.sB}}
	for _, f := range flows {
		if err := f.rx.conn.SetReadBuffer(16 << 20); err != nil {
			t.Fatal(err)
		}
		f.seen = &seqSet{}
		f.rx.seqs.Store(f.seen)
	}
	out := filepath.Join(t.TempDir(), "out")
	s := l.bessRun(t, gtpqos, flows, out, []string{"--backend", "htb,edt", "mbr=" + arm + ",policer=off"})
	checkRcvbuf(t, l)
	js, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("results.json: %v", err)
	}
	var res ab.Results
	if err := json.Unmarshal(js, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	seen := map[string]bool{}
	for _, r := range res.RunList {
		seen[r.Backend] = true
		from := r.Started.Add(time.Duration(res.WindowFrom) * time.Second)
		to := r.Started.Add(time.Duration(res.WindowTo) * time.Second)
		logTC(t, s.tc, r.Arm, to)
		for _, fr := range r.Flows {
			f := flows[fr.Name]
			if f == nil {
				continue
			}
			judgeBess(t, s, r.Arm, fr, f, from, to, strings.Join(strings.Fields(string(load))[:3], " "))
		}
	}
	for _, want := range []string{"htb", "edt"} {
		if !seen[want] {
			t.Errorf("results.json has no run under backend %s", want)
		}
	}
}

// bessFlow is one flow of the MBR cases: its sender, its receiver and the
// sequence numbers the receiver saw.
type bessFlow struct {
	tx   *udpSender
	rx   *udpCounter
	sent atomic.Uint64
	seen *seqSet
}

// bessRun runs 'gtpqos ab --dev n3' with the arm arguments while A and B
// send numbered payload-byte datagrams at their bessOffer of bessMBR (in
// user IP packets), and returns the sampled counters. The senders stop
// after ab and a second more, so what the queues held arrives.
func (l *gtp5gLab) bessRun(t *testing.T, gtpqos string, flows map[string]*bessFlow, out string, arms []string) bessSamples {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, len(flows))
	for name, f := range flows {
		go func(f *bessFlow, mbps float64) { errc <- paceSeq(ctx, f, mbps, payload) }(f, bessOffer[name]*bessMBR)
	}
	smp := sampleBess(flows["A"], flows["B"])
	tcs := snapshotTC(ctx, "n3", 2*time.Second)
	args := append([]string{"ab", "--dev", "n3", "--runs", "1", "--duration", abDuration.String(),
		"--window", "5-15", "--payload", fmt.Sprint(payload), "--out", out}, arms...)
	outb, runErr := exec.Command(gtpqos, args...).CombinedOutput()
	cancel()
	for range flows {
		if err := <-errc; err != nil {
			t.Errorf("traffic: %v", err)
		}
	}
	time.Sleep(time.Second)
	t.Logf("gtpqos %s\n%s", strings.Join(args, " "), outb)
	if runErr != nil {
		t.Logf("gtpqos ab exited with %v (the cases are judged below on the receivers)", runErr)
	}
	s := smp.stop()
	s.tc = <-tcs
	return s
}

// tcSnapshot is 'tc -s qdisc show' of a device at one instant.
type tcSnapshot struct {
	at  time.Time
	out string
}

// snapshotTC reads 'tc -s qdisc show dev dev' every period until ctx
// ends, and then sends what it read.
func snapshotTC(ctx context.Context, dev string, period time.Duration) <-chan []tcSnapshot {
	c := make(chan []tcSnapshot, 1)
	go func() {
		var ss []tcSnapshot
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				c <- ss
				return
			case <-tick.C:
			}
			out, _ := exec.Command("tc", "-s", "qdisc", "show", "dev", dev).CombinedOutput()
			ss = append(ss, tcSnapshot{time.Now(), string(out)})
		}
	}()
	return c
}

// logTC logs the last tc snapshot taken before to, one line each.
func logTC(t *testing.T, ss []tcSnapshot, arm string, to time.Time) {
	t.Helper()
	var last *tcSnapshot
	for i := range ss {
		if ss[i].at.Before(to) {
			last = &ss[i]
		}
	}
	if last == nil {
		return
	}
	for _, l := range strings.Split(strings.TrimSpace(last.out), "\n") {
		t.Logf("ABBESS tc arm %s at %s: %s", arm, last.at.Format("15:04:05.000"), strings.TrimSpace(l))
	}
}

// paceSeq sends size-byte datagrams from f's sender at ipMbps of user IP
// packets until ctx ends, each carrying its sequence number (from 0) in
// its first 8 bytes, catching up on a 5 ms tick like pace; f.sent counts
// the datagrams written.
func paceSeq(ctx context.Context, f *bessFlow, ipMbps float64, size int) error {
	b := make([]byte, size)
	perSec := ipMbps * 1e6 / float64(8*(size+ab.InnerUDPOverhead))
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for due := uint64(perSec * time.Since(start).Seconds()); f.sent.Load() < due; {
			binary.BigEndian.PutUint64(b, f.sent.Load())
			if _, err := f.tx.conn.Write(b); err != nil {
				return fmt.Errorf("send %s: %w", f.tx.name, err)
			}
			f.sent.Add(1)
		}
	}
}

// judgeBess judges one flow of one run on the datagrams its sender sent in
// [from, to): A's loss at 50% ±1%, B's at none.
func judgeBess(t *testing.T, s bessSamples, arm string, fr ab.FlowRun, f *bessFlow, from, to time.Time, load string) {
	t.Helper()
	a, ok1 := s.at(from)
	b, ok2 := s.at(to)
	if !ok1 || !ok2 || !b.at.After(a.at) {
		t.Fatalf("arm %s: no samples around %v-%v", arm, from, to)
	}
	i := 0
	if fr.Name == "B" {
		i = 1
	}
	lo, hi := a.sent[i], b.sent[i]
	sent := int64(hi - lo)
	got := f.seen.count(lo, hi)
	loss := float64(sent-got) / float64(sent)
	dt := b.at.Sub(a.at).Seconds()
	ipBits := float64(8 * (payload + ab.InnerUDPOverhead))
	offered := float64(sent) * ipBits / dt / 1e6
	recv := float64(b.rx[i]-a.rx[i]) * ipBits / dt / 1e6
	gap := s.maxGap(from, to)
	t.Logf("ABBESS arm %s flow %s (guest load %s): offered %.4f Mbit/s of IP packets (%.3f × MBR %g), received %.4f (%.4f × MBR), sent %d lost %d loss %.3f%%, shaper drops %d, softnet drops %d, longest sampler gap %v",
		arm, fr.Name, load, offered, offered/bessMBR, round3(bessMBR), recv, recv/bessMBR, sent, sent-got, 100*loss, fr.Drops,
		b.softnetDrops-a.softnetDrops, gap.Round(time.Millisecond))
	want := bessOffer[fr.Name]
	if offered < 0.99*want*bessMBR {
		t.Errorf("arm %s: flow %s offered %.4f Mbit/s, below %g × its MBR: the guest's CPU limited the sender", arm, fr.Name, offered, want)
	}
	if want < 1 {
		if sent != got {
			t.Logf("ABBESS arm %s flow %s lost per second of the window: %v", arm, fr.Name, s.lostPerSecond(i, f.seen, lo, hi, from))
			for _, n := range f.seen.missing(lo, hi, 10) {
				at := s.sentAt(i, n)
				t.Logf("ABBESS arm %s flow %s lost datagram %d sent at %s (window +%.3f s), longest sampler gap within 1 s of it %v",
					arm, fr.Name, n, at.Format("15:04:05.000"), at.Sub(from).Seconds(), s.maxGap(at.Add(-time.Second), at.Add(time.Second)).Round(time.Millisecond))
			}
			t.Errorf("arm %s: flow %s offered %g × its MBR lost %d of %d datagrams sent in the window, want none", arm, fr.Name, want, sent-got, sent)
		}
		return
	}
	wantLoss := 1 - 1/want
	if math.Abs(loss-wantLoss) > 0.01 {
		t.Errorf("arm %s: flow %s offered %.3f × its MBR lost %.3f%% of what it sent, want %g%% ±1%%", arm, fr.Name, offered/bessMBR, 100*loss, 100*wantLoss)
	}
}

// checkRcvbuf fails the test when the UE's UDP receivers dropped datagrams
// for want of socket buffer: their counts would then undercount the link.
func checkRcvbuf(t *testing.T, l *gtp5gLab) {
	t.Helper()
	_ = l.gnb.Do(func() error {
		snmp, err := os.ReadFile("/proc/thread-self/net/snmp")
		for _, line := range strings.Split(string(snmp), "\n") {
			if f := strings.Fields(line); len(f) > 5 && f[0] == "Udp:" && f[5] != "RcvbufErrors" && f[5] != "0" {
				t.Errorf("the UE's receivers dropped %s datagrams (RcvbufErrors): their counts undercount the link", f[5])
			}
		}
		return err
	})
}

// seqSet is the set of sequence numbers one receiver saw.
type seqSet struct {
	mu   sync.Mutex
	bits []uint64
}

func (s *seqSet) add(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uint64(len(s.bits)) <= n/64 {
		s.bits = append(s.bits, 0)
	}
	s.bits[n/64] |= 1 << (n % 64)
}

func (s *seqSet) has(n uint64) bool {
	return n/64 < uint64(len(s.bits)) && s.bits[n/64]&(1<<(n%64)) != 0
}

// count is how many of lo..hi-1 were seen.
func (s *seqSet) count(lo, hi uint64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c int64
	for n := lo; n < hi; n++ {
		if s.has(n) {
			c++
		}
	}
	return c
}

// missing is up to max of lo..hi-1 that were not seen.
func (s *seqSet) missing(lo, hi uint64, max int) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint64
	for n := lo; n < hi && len(out) < max; n++ {
		if !s.has(n) {
			out = append(out, n)
		}
	}
	return out
}

// bessSample is the senders' and receivers' counts of A and B, and the
// guest's softnet backlog drops, at one instant.
type bessSample struct {
	at           time.Time
	sent         [2]uint64
	rx           [2]int64
	softnetDrops uint64
}

// bessSamples are a run's samples, and its tc snapshots.
type bessSamples struct {
	ss []bessSample
	tc []tcSnapshot
}

// bessSampler samples A and B every 20 ms.
type bessSampler struct {
	done chan struct{}
	out  chan bessSamples
}

func sampleBess(a, b *bessFlow) *bessSampler {
	s := &bessSampler{done: make(chan struct{}), out: make(chan bessSamples, 1)}
	go func() {
		var ss []bessSample
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			ss = append(ss, bessSample{time.Now(), [2]uint64{a.sent.Load(), b.sent.Load()}, [2]int64{a.rx.n.Load(), b.rx.n.Load()}, softnetDrops()})
			select {
			case <-s.done:
				s.out <- bessSamples{ss: ss}
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *bessSampler) stop() bessSamples { close(s.done); return <-s.out }

// softnetDrops is the sum over CPUs of the packets the kernel dropped for
// a full input backlog (/proc/net/softnet_stat's second column).
func softnetDrops() uint64 {
	b, _ := os.ReadFile("/proc/net/softnet_stat")
	var sum uint64
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			v, _ := strconv.ParseUint(f[1], 16, 64)
			sum += v
		}
	}
	return sum
}

// at is the last sample taken at or before t.
func (s bessSamples) at(t time.Time) (bessSample, bool) {
	var last bessSample
	ok := false
	for _, x := range s.ss {
		if x.at.After(t) {
			break
		}
		last, ok = x, true
	}
	return last, ok
}

// sentAt is when flow i's sender sent datagram n: the first sample that
// counts it.
func (s bessSamples) sentAt(i int, n uint64) time.Time {
	for _, x := range s.ss {
		if x.sent[i] > n {
			return x.at
		}
	}
	return time.Time{}
}

// maxGap is the longest time between two consecutive samples in
// [from, to]: how long the guest did not run the sampler.
func (s bessSamples) maxGap(from, to time.Time) time.Duration {
	ss := s.ss
	var gap time.Duration
	for i := 1; i < len(ss); i++ {
		if ss[i].at.Before(from) || ss[i-1].at.After(to) {
			continue
		}
		gap = max(gap, ss[i].at.Sub(ss[i-1].at))
	}
	return gap
}

// bessTCPMBR are the MBRs of the TCP arm's flows in Mbit/s (12, 6 and 6
// at abScale), on the lab's 7.5 Mbit/s link: 6 in all, less than the
// link and than the 7.0 of TCP the loaded guest carried through gtp5g,
// so each connection is held by its flow's MBR alone.
var bessTCPMBR = map[string]float64{"A": 12 * abScale, "B": 6 * abScale, "C": 6 * abScale}

// bessTCPYAML is the TCP arm under backend be: A, B and C non-GBR flows
// of session 1 at their bessTCPMBR, bessTCPBudget, each backend's own leaves.
func bessTCPYAML(be string) string {
	return fmt.Sprintf(`link: %gmbit
policy:
  mode: aware
  backend: %s
%sflows:
  - {name: A, seid: 1, qer: 1, qfi: 2, direction: downlink, gbr: 0, mbr: %gmbit, mark: 2}
  - {name: B, seid: 1, qer: 2, qfi: 3, direction: downlink, gbr: 0, mbr: %gmbit, mark: 3}
  - {name: C, seid: 1, qer: 3, qfi: 4, direction: downlink, gbr: 0, mbr: %gmbit, mark: 4}
`, 30*abScale, be, bessTCPBudget, bessTCPMBR["A"], bessTCPMBR["B"], bessTCPMBR["C"])
}

// TestGtp5gGuestABBessTCP measures TCP through MBRs on the real gtp5g
// datapath under each backend in turn (bessTCPYAML, gtp5g's native
// policer off): one iperf3 connection per flow (tcpArm), each flow's
// goodput and retransmits. It holds every flow within its MBR (+1%, in IP
// packets) and to moving data, and edt's retransmits (A, B and C
// together) to no more than htb's in the same run.
func TestGtp5gGuestABBessTCP(t *testing.T) {
	requireGtp5gGuest(t)
	gtpqos, l := startGtp5gAB(t, abScale)
	run := func(args ...string) {
		if out, err := exec.Command(gtpqos, args...).CombinedOutput(); err != nil {
			t.Fatalf("gtpqos %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command(gtpqos, "reset", "--dev", "n3").Run() })
	run("policer", "off")
	retrans := map[string]uint64{}
	for _, be := range []string{"htb", "edt"} {
		file := filepath.Join(t.TempDir(), be+".yaml")
		if err := os.WriteFile(file, []byte(bessTCPYAML(be)), 0o644); err != nil {
			t.Fatal(err)
		}
		run("reset", "--dev", "n3")
		run("apply", "-f", file, "--dev", "n3")
		got := l.tcpArm(t)
		load, _ := os.ReadFile("/proc/loadavg")
		var sum float64
		for _, name := range []string{"A", "B", "C"} {
			f := got[name]
			sum += f.IP()
			retrans[be] += f.Retransmits
			t.Logf("ABBESS tcp %s (guest load %s): flow %s %.3f Mbit/s goodput (%.3f of IP packets, MBR %g, MSS %d, seconds %d-%d), %d retransmits",
				be, strings.Join(strings.Fields(string(load))[:3], " "), name, f.Goodput, f.IP(), bessTCPMBR[name], f.MSS, tcpOmit, tcpDuration, f.Retransmits)
			if f.Goodput <= 0 {
				t.Errorf("TCP %s: flow %s moved no data", be, name)
			}
			if r := f.IP(); r > 1.01*bessTCPMBR[name] {
				t.Errorf("TCP %s: flow %s %.3f Mbit/s of IP packets, past its MBR %g (+1%%)", be, name, r, bessTCPMBR[name])
			}
		}
		t.Logf("ABBESS tcp %s: aggregate %.3f Mbit/s of IP packets (MBRs 6 on the %g link), %d retransmits", be, sum, 30*abScale, retrans[be])
	}
	if retrans["edt"] > retrans["htb"] {
		t.Errorf("TCP: %d retransmits under edt, more than htb's %d in the same run", retrans["edt"], retrans["htb"])
	}
}

// lostPerSecond counts flow i's datagrams lo..hi-1 that did not arrive,
// by the second of the window (from) they were sent in.
func (s bessSamples) lostPerSecond(i int, seen *seqSet, lo, hi uint64, from time.Time) []int {
	var out []int
	for _, n := range seen.missing(lo, hi, 1<<30) {
		sec := int(s.sentAt(i, n).Sub(from) / time.Second)
		for len(out) <= sec {
			out = append(out, 0)
		}
		if sec >= 0 {
			out[sec]++
		}
	}
	return out
}
