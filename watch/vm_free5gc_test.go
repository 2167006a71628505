package watch

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
	"github.com/free5gc/gtpqos/tests/free5gc"
	"github.com/free5gc/gtpqos/tests/vm"
)

// free5gcSetup makes the guest's N3 (n3w) and N6 (n6w) veths and the gtp5g
// device; a stock module (no mark modes) ends it with FREE5GC-STOCK, unless
// MODE is stock, which a patched module ends with FREE5GC-PATCHED.
const free5gcSetup = `set -u
cd "$VM_WORK"
fail() { echo "FAIL: $*"; echo "== watch log"; cat watch.log; exit 1; }
ip link set lo up
ip link add n3w type veth peer name n3p
ip link set n3w up; ip link set n3p up
ip addr add 10.100.0.1/24 dev n3w
ip link add n6w type veth peer name n6p
ip link set n6w up; ip link set n6p up
./gogtp5g-link add upfgtp >link.log 2>&1 &
for i in $(seq 100); do ip link show upfgtp >/dev/null 2>&1 && break; sleep 0.1; done
ip link set upfgtp up || fail "no gtp5g device"
if [ "$MODE" = stock ]; then
	[ -e /proc/gtp5g/qos_mark ] && { echo "FREE5GC-PATCHED"; exit 0; }
	MODE=auto
else
	[ -e /proc/gtp5g/qos_mark ] || { echo "FREE5GC-STOCK"; exit 0; }
fi
`

// free5gcScenario: the quarter-rate scenario (free5gc.Quarter) programmed
// into the real gtp5g under a running watch (7.5 Mbit/s N3, mark mode $MODE), then ICMP
// UDP loads (1400-byte IP packets, udpload) through gtp5g's downlink
// datapath: the default flow alone at 7 Mbit/s (over its 5 Mbit/s AMBR),
// then every flow at once (default 3, A 5, B 2, C 3, D 1.5: 14.5 Mbit/s on
// the 7.5 Mbit/s link). Class counters are read 4 s into each phase (after
// the buckets' bursts) and 15 s later, by classstats (one netlink dump framed
// by the guest's monotonic clock): a tc process takes 0.2 to 0.4 s to start
// and dump under TCG, which blurs a window by up to 5%.
const free5gcScenario = free5gcSetup + `# Non-GBR minimums small enough that every class's rate fits the link
# (GBRs 5.5 Mbit/s + 3 x 0.1 + the default class's 0.1), no spare pool
# (short counter dumps).
printf 'policy:\n  non_gbr_min: 100kbit\n  default_rate: 100kbit\n  pool: 0\n' >watch.yaml
./gtpqos watch --config watch.yaml --n3 n3w --n6 n6w --link-rate 7500kbit --mark-mode "$MODE" --resync 5s --metrics-addr 127.0.0.1:9471 >watch.log 2>&1 &
W=$!
sleep 1
kill -0 $W || fail "watch exited at start"
T=./gogtp5g-tunnel
. ./rules.sh
leaves() { tc class show dev n3w | grep -v 'prio 7 rate 8Kbit ceil 8Kbit' | grep -c leaf; }
for i in $(seq 300); do [ "$(leaves)" -ge 7 ] && break; sleep 0.1; done
echo "leaf classes: $(leaves)"
echo "MARK-MODE $(cat /proc/gtp5g/qos_mark)"
# The flows' DN addresses (their PDRs' SDF filters) and one no filter
# names (the default path's).
for a in 2 3 4; do ip addr add 192.168.100.$a/32 dev lo; done
ip addr add 10.200.0.9/32 dev lo
ip route add 10.60.0.0/24 dev upfgtp
ip neigh add 10.100.0.2 lladdr "$(cat /sys/class/net/n3p/address)" dev n3w
echo "===STATUS-BEGIN==="; ./gtpqos status --json --n3 n3w --n6 n6w --interval 0; echo "===STATUS-END==="
LOADS=
load() { ./udpload -src $1 -dst $2:9000 -rate $3 -for 45s & LOADS="$LOADS $!"; }
# Each reading is classstats's: the counters of one netlink dump, framed by
# the monotonic clock just before and after it.
phase() {
	sleep 4; echo "===STATS $1 t1==="; ./classstats -dev n3w
	sleep 15; echo "===STATS $1 t2==="; ./classstats -dev n3w
	n=0; for p in $LOADS; do kill -0 $p 2>/dev/null && n=$((n+1)); done; echo "RUNNING $1 $n"
	wait $LOADS; LOADS= # the loads run 45 s: past the second reading (19 s in), even when a loaded host stretches the sleeps by half
}
load 10.200.0.9 10.60.0.1 7000000
phase alone
load 10.200.0.9 10.60.0.1 3000000; load 192.168.100.2 10.60.0.1 5000000; load 192.168.100.3 10.60.0.1 2000000
load 192.168.100.4 10.60.0.1 3000000; load 192.168.100.2 10.60.0.2 1500000
phase all
echo "NOT-ALONE $(wget -qO- http://127.0.0.1:9471/metrics | awk '$1 == "gtpqos_flows_not_alone{dev=\"n3w\"}" { print $2 }')"
kill -TERM $W; wait $W
echo "== watch log"; cat watch.log
echo FREE5GC-SCENARIO-OK
`

// free5gcQFIScenario programs the rules first, then starts watch in mark
// mode qfi: it must refuse, before it changes anything, in one line.
const free5gcQFIScenario = free5gcSetup + `T=./gogtp5g-tunnel
. ./rules.sh
timeout 20 ./gtpqos watch --n3 n3w --n6 n6w --link-rate 7500kbit --mark-mode qfi >watch.log 2>&1
echo "WATCH-EXIT $?"
echo "===WATCH-LOG==="; cat watch.log; echo "===END==="
echo "QOS-MARK $(cat /proc/gtp5g/qos_mark)"
echo "QDISC $(tc qdisc show dev n3w | grep -c htb)"
echo FREE5GC-QFI-OK
`

// classStats parses `tc -s class show` into class id -> (bytes, packets).
func classStats(s string) map[string][2]uint64 {
	out := map[string][2]uint64{}
	re := regexp.MustCompile(`(?m)^class htb (\S+) .*\n\s*Sent (\d+) bytes (\d+) pkt`)
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		b, _ := strconv.ParseUint(m[2], 10, 64)
		p, _ := strconv.ParseUint(m[3], 10, 64)
		out[m[1]] = [2]uint64{b, p}
	}
	return out
}

func between(out, begin, end string) string {
	i := strings.Index(out, begin)
	if i < 0 {
		return ""
	}
	rest := out[i+len(begin):]
	if j := strings.Index(rest, end); j >= 0 {
		return rest[:j]
	}
	return rest
}

// ceilSlack is what a class may pass above its ceiling (AMBR, MBR) in user
// IP bytes: 1%. A class held at its ceiling keeps its 32 KiB bucket empty
// at both readings (4 s into the load, after the bucket's burst), so over a
// 15 s window it adds at most a packet.
const ceilSlack = 1.01

// TestVMWatchFree5GCShapes drives `gtpqos watch` with free5GC's rule
// shapes on the real patched gtp5g ($GTP5G_KO) and judges the classes by
// what they sent (packet accounting: the user's IP bytes): the default
// flow alone ≤ AMBR; the default flow and non-GBR flow C together ≤ AMBR;
// C ≤ its MBR (ceilings within ceilSlack); GBR flows A, B and D ≥ GBR − 1%
// under congestion; UE 2's flow D in a class of its own; under 1% of the
// packets in the default class; no flow enforced in another's class. A
// stock module skips (TestVMWatchFree5GCStock is its test).
func TestVMWatchFree5GCShapes(t *testing.T) {
	out, ue1, ue2 := runFree5GC(t, free5gcScenario, "auto")
	if !strings.Contains(out, "FREE5GC-SCENARIO-OK") {
		t.Fatal("scenario failed; see the guest output above")
	}
	rep, class := shapesStatus(t, out, ue1, ue2)
	checkShapes(t, out, rep, class, 0)
	if rep.MarkMode != gtp5g.MarkPDR.String() {
		t.Logf("module without mark mode pdr: ran in %s mode", rep.MarkMode)
	}
}

// TestVMWatchFree5GCStock runs the shapes on stock gtp5g ($GTP5G_KO without
// the patch; a patched module skips): watch classifies N3 by TEID and the
// sessions' SDF rules, and every check of TestVMWatchFree5GCShapes holds.
func TestVMWatchFree5GCStock(t *testing.T) {
	out, ue1, ue2 := runFree5GC(t, free5gcScenario, "stock")
	if !strings.Contains(out, "FREE5GC-SCENARIO-OK") {
		t.Fatal("scenario failed; see the guest output above")
	}
	rep, class := shapesStatus(t, out, ue1, ue2)
	checkShapes(t, out, rep, class, 0)
}

// checkShapes judges a run of free5gcScenario (see
// TestVMWatchFree5GCShapes) where notAlone flows on n3w are not enforced
// alone (gtpqos_flows_not_alone).
func checkShapes(t *testing.T, out string, rep shapesReport, class map[string]string, notAlone int) {
	t.Helper()
	t.Logf("mark mode %s; classes %v; problems %v", rep.MarkMode, class, rep.Problems)
	for _, n := range []string{"default1", "A", "B", "C", "D"} {
		if class[n] == "" {
			t.Errorf("flow %s has no class", n)
		}
	}
	if class["A"] == class["D"] {
		t.Errorf("UE 2's flow D shares UE 1's A class %s", class["A"])
	}
	rate := func(phase, name string) rateBounds { return phaseRate(t, out, phase, name, class[name]) }
	const ambr = 5e6
	def := rate("alone", "default1")
	t.Logf("alone: default flow %s Mbit/s (AMBR 5)", def)
	if def.hi > ambr*ceilSlack {
		t.Errorf("default flow alone: up to %s Mbit/s > AMBR 5 + 1%%", def)
	}
	if def.lo < ambr*0.5 {
		t.Errorf("default flow alone: %s Mbit/s, not even half the AMBR: the load did not reach the class", def)
	}
	r := map[string]rateBounds{}
	for _, n := range []string{"default1", "A", "B", "C", "D"} {
		r[n] = rate("all", n)
	}
	t.Logf("all: default %s, A %s, B %s, C %s, D %s Mbit/s", r["default1"], r["A"], r["B"], r["C"], r["D"])
	if s := r["default1"].hi + r["C"].hi; s > ambr*ceilSlack {
		t.Errorf("default + C: up to %.3f Mbit/s > AMBR 5 + 1%%", s/1e6)
	}
	checks := []struct {
		name     string
		min, max float64
	}{{"C", 0, 2e6 * ceilSlack}, {"A", 3.75e6 * 0.99, 4.5e6 * ceilSlack}, {"B", 1.25e6 * 0.99, 1.5e6 * ceilSlack}, {"D", 0.5e6 * 0.99, 0.75e6 * ceilSlack}}
	for _, c := range checks {
		if r[c.name].lo < c.min || r[c.name].hi > c.max {
			t.Errorf("flow %s: %s Mbit/s, want %.3f..%.3f", c.name, r[c.name], c.min/1e6, c.max/1e6)
		}
	}
	// The default class: the tree's RoleDefault class (minor 2).
	all := classStats(between(out, "===STATS all t2===", "==="))
	var total, inDefault uint64
	for id, v := range all {
		if strings.HasSuffix(id, ":1") {
			continue // the link class counts everything again
		}
		if strings.HasSuffix(id, ":2") {
			inDefault = v[1]
		}
		if isLeaf(class, id) || strings.HasSuffix(id, ":2") {
			total += v[1]
		}
	}
	if total == 0 || float64(inDefault) > 0.01*float64(total) {
		t.Errorf("default class: %d of %d packets, want under 1%%", inDefault, total)
	}
	if got := between(out, "NOT-ALONE ", "\n"); got != strconv.Itoa(notAlone) {
		t.Errorf("gtpqos_flows_not_alone on n3w: %q, want %d", got, notAlone)
	}
	// gtp5g's device MTU 1464 does not fit a 1500-byte N3: status says so.
	if !strings.Contains(strings.Join(rep.Problems, "\n"), "MTU 1464 + 44 bytes of GTP-U encapsulation = 1508 > N3 n3w MTU 1500") {
		t.Errorf("status gave no MTU warning for upfgtp's 1464 on n3w's 1500: %v", rep.Problems)
	}
}

// runFree5GC programs free5GC's quarter scenario with script in the guest
// (plus more flows of UE 1, added by a session modification) on
// $GTP5G_KO under watch's mark mode mode, and returns the guest output; a
// stock module skips.
func runFree5GC(t *testing.T, script, mode string, more ...free5gc.Flow) (string, *free5gc.Session, *free5gc.Session) {
	t.Helper()
	return runFree5GCWith(t, script, mode, nil, nil, more...)
}

// runFree5GCWith is runFree5GC with extra files in the guest's work
// directory and extra modules loaded.
func runFree5GCWith(t *testing.T, script, mode string, extra map[string]string, mods []string, more ...free5gc.Flow) (string, *free5gc.Session, *free5gc.Session) {
	t.Helper()
	ko := vm.RequireKO(t)
	u, ue1, ue2 := free5gc.Quarter()
	for _, f := range more {
		u.AddFlow(ue1, f)
	}
	d := free5gc.Build(false, ue1, ue2)
	files := map[string]string{
		"gtpqos":         vm.BuildBinary(t, "./cmd/gtpqos"),
		"gogtp5g-link":   vm.BuildBinary(t, "github.com/free5gc/go-gtp5gnl/cmd/gogtp5g-link"),
		"gogtp5g-tunnel": vm.BuildBinary(t, "github.com/free5gc/go-gtp5gnl/cmd/gogtp5g-tunnel"),
		"udpload":        vm.BuildBinary(t, "./tests/free5gc/udpload"),
		"classstats":     vm.BuildBinary(t, "./tests/free5gc/classstats"),
	}
	rules := t.TempDir() + "/rules.sh"
	if err := os.WriteFile(rules, []byte(free5gc.TunnelCommands(d)), 0o644); err != nil {
		t.Fatal(err)
	}
	files["rules.sh"] = rules
	for name, path := range extra {
		files[name] = path
	}
	if mode == "stock" {
		mods = append(mods, "sch_ingress", "cls_bpf") // the GTP-U classifier
	}
	res := vm.Run(t, vm.Config{Script: script, Files: files, KO: ko, Env: map[string]string{"MODE": mode}, Modules: mods, Timeout: 8 * time.Minute})
	if strings.Contains(res.Output, "FREE5GC-PATCHED") {
		t.Skip("GTP5G_KO is a patched gtp5g: this test is for stock gtp5g's TEID and SDF classifier")
	}
	if strings.Contains(res.Output, "FREE5GC-STOCK") {
		t.Skip("GTP5G_KO is a stock gtp5g: this test needs the patched module's mark mode " + mode + " (TestVMWatchFree5GCStock runs the shapes on stock gtp5g)")
	}
	if res.ExitCode != 0 {
		t.Fatalf("scenario failed (exit %d); see the guest output above", res.ExitCode)
	}
	return res.Output, ue1, ue2
}

// shapesStatus is the status --json the scenario printed (the fields used
// here) and each downlink flow's class by name (default1, default2, A..D).
func shapesStatus(t *testing.T, out string, ue1, ue2 *free5gc.Session) (shapesReport, map[string]string) {
	t.Helper()
	var rep shapesReport
	if err := json.Unmarshal([]byte(between(out, "===STATUS-BEGIN===", "===STATUS-END===")), &rep); err != nil {
		t.Fatalf("status --json: %v", err)
	}
	class := map[string]string{}
	for _, f := range rep.Flows {
		if f.Direction != "downlink" {
			continue
		}
		for _, s := range []*free5gc.Session{ue1, ue2} {
			if f.SEID != s.SEID {
				continue
			}
			if f.QER == s.DefaultQER {
				class[fmt.Sprintf("default%d", s.SEID)] = f.Class
			}
			for _, fl := range s.Flows {
				if fl.QER == f.QER {
					class[fl.Name] = f.Class
				}
			}
		}
	}
	return rep, class
}

type shapesReport struct {
	MarkMode string   `json:"mark_mode"`
	Problems []string `json:"problems"`
	Flows    []struct {
		SEID      uint64 `json:"seid"`
		QER       uint32 `json:"qer"`
		Direction string `json:"direction"`
		Class     string `json:"class"`
	} `json:"flows"`
}

// phaseRate is what class c passed between a phase's two readings, in
// user IP bit/s.
func phaseRate(t *testing.T, out, phase, name, c string) rateBounds {
	t.Helper()
	a := classStats(between(out, "===STATS "+phase+" t1===", "==="))
	b := classStats(between(out, "===STATS "+phase+" t2===", "==="))
	window, slack := readingWindow(t, out, phase)
	if want := map[string]string{"alone": "1", "all": "5"}[phase]; between(out, "RUNNING "+phase+" ", "\n") != want {
		t.Fatalf("%s: %q of the phase's %s loads still ran at the second reading", phase, between(out, "RUNNING "+phase+" ", "\n"), want)
	}
	bytes, pkts := b[c][0]-a[c][0], b[c][1]-a[c][1]
	t.Logf("%s %s (class %s): %d bytes, %d packets over %.3f ± %.3f s", phase, name, c, bytes, pkts, window, slack)
	bits := float64(bytes) * 8
	return rateBounds{lo: bits / (window + slack), hi: bits / (window - slack)}
}

// rateBounds is a class's rate (bit/s) as far as the reading window is
// known: a ceiling must hold for hi, a floor for lo.
type rateBounds struct{ lo, hi float64 }

func (r rateBounds) String() string {
	if r.hi-r.lo < 0.0005e6 {
		return fmt.Sprintf("%.3f", (r.lo+r.hi)/2e6)
	}
	return fmt.Sprintf("%.3f..%.3f", r.lo/1e6, r.hi/1e6)
}

// readingWindow is the time between a phase's two readings: between the
// midpoints of their dumps, off by at most slack, half their durations
// together (a loaded host slows the dumps). It fails the test when slack is
// over 0.5% of the window: the ceilings' 1% would be mostly measurement.
func readingWindow(t *testing.T, out, phase string) (w, slack float64) {
	t.Helper()
	var mid, spread [2]float64
	for i, at := range []string{"t1", "t2"} {
		m := regexp.MustCompile(`MONO ([0-9.]+) ([0-9.]+)`).FindStringSubmatch(between(out, "===STATS "+phase+" "+at+"===", "class htb"))
		if m == nil {
			t.Fatalf("no clock reading for %s %s", phase, at)
		}
		a, _ := strconv.ParseFloat(m[1], 64)
		b, _ := strconv.ParseFloat(m[2], 64)
		mid[i], spread[i] = (a+b)/2, b-a
	}
	w, slack = mid[1]-mid[0], (spread[0]+spread[1])/2
	if w <= 0 || slack > 0.005*w {
		t.Fatalf("%s: readings %.3f s apart took %.3f and %.3f s: the window is not known to 0.5%%", phase, w, spread[0], spread[1])
	}
	return w, slack
}

func isLeaf(class map[string]string, id string) bool {
	for _, c := range class {
		if c == id {
			return true
		}
	}
	return false
}

// TestVMWatchFree5GCFlowMode runs the shapes in mark mode flow with a
// second non-GBR flow F (QFI 5, MBR 1 Mbit/s, no load) added to UE 1: gtp5g
// marks a PDR with the flow mark of its first QER with a QFI, and free5GC
// lists the session-AMBR QER first on every non-GBR path, so C and F carry
// one mark and F is not enforced alone: status names it and the metric
// counts it. (With one non-GBR flow per session, as in Quarter, flow mode
// keeps every flow apart.) What still holds: every other check of
// TestVMWatchFree5GCShapes, F's packets (none) aside.
func TestVMWatchFree5GCFlowMode(t *testing.T) {
	out, ue1, ue2 := runFree5GC(t, free5gcScenario, "flow", free5gc.Flow{Name: "F", QFI: 5, MBR: 1 * free5gc.Mbit, DN: "192.168.100.5"})
	if !strings.Contains(out, "FREE5GC-SCENARIO-OK") {
		t.Fatal("scenario failed; see the guest output above")
	}
	rep, class := shapesStatus(t, out, ue1, ue2)
	if rep.MarkMode != "flow" {
		t.Fatalf("status says mark mode %q, want flow", rep.MarkMode)
	}
	f := ue1.Find("F")
	shared := ""
	for _, p := range rep.Problems {
		if strings.Contains(p, "not alone: mark mode flow") && strings.Contains(p, fmt.Sprintf("flow seid=1 qer=%d carries", f.QER)) {
			shared = p
		}
	}
	if shared == "" {
		t.Errorf("status does not name F (qer %d) as sharing C's mark in mark mode flow: %v", f.QER, rep.Problems)
	}
	checkShapes(t, out, rep, class, 1)
}

// TestVMWatchFree5GCQFIMode starts watch in mark mode qfi on free5GC's
// rules: UE 2's flow D goes out on QFI 2 like UE 1's A, and free5GC's
// non-GBR flow C with the default QFI, so watch must refuse in one line
// naming the flows, before it sets the mode or writes a qdisc.
func TestVMWatchFree5GCQFIMode(t *testing.T) {
	out, _, _ := runFree5GC(t, free5gcQFIScenario, "qfi")
	if !strings.Contains(out, "FREE5GC-QFI-OK") {
		t.Fatal("scenario failed; see the guest output above")
	}
	log := strings.TrimSpace(between(out, "===WATCH-LOG===\n", "===END==="))
	t.Logf("watch: %s; %s; %s", between(out, "WATCH-EXIT ", "\n"), between(out, "QOS-MARK ", "\n"), log)
	if code := between(out, "WATCH-EXIT ", "\n"); code == "0" || code == "124" {
		t.Errorf("watch in mark mode qfi: exit %s, want a refusal", code)
	}
	lines := strings.Split(log, "\n")
	if len(lines) != 1 || !strings.Contains(log, "qfi") {
		t.Errorf("watch's refusal is not one line naming mark mode qfi: %q", log)
	}
	if between(out, "QDISC ", "\n") != "0" {
		t.Errorf("watch wrote an HTB qdisc on n3w before refusing")
	}
}
