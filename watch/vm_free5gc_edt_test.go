package watch

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/tests/free5gc"
)

// free5gcEDTScenario is free5gcScenario under a watch whose policy selects
// backend edt (sch_fq loaded): the loads under mark mode auto (pdr), each reading classstats -edt (the
// tree's classes, the leaves' drops and the program's per-flow counters in
// one frame); then UE 2's session is deleted with gogtp5g-tunnel
// (del2.sh): its map entries must go and no class may come or go.
const free5gcEDTScenario = free5gcSetup + `printf 'policy:\n  backend: edt\n  non_gbr_min: 100kbit\n  default_rate: 100kbit\n' >watch.yaml
./gtpqos watch --config watch.yaml --n3 n3w --n6 n6w --link-rate 7500kbit --mark-mode "$MODE" --resync 5s --metrics-addr 127.0.0.1:9471 >watch.log 2>&1 &
W=$!
sleep 1
kill -0 $W || fail "watch exited at start"
T=./gogtp5g-tunnel
. ./rules.sh
entries() { ./classstats -dev n3w -edt 2>/dev/null | grep -c '^flow '; }
for i in $(seq 300); do [ "$(entries)" -ge 6 ] && break; sleep 0.1; done
echo "map entries: $(entries)"
echo "MARK-MODE $(cat /proc/gtp5g/qos_mark)"
for a in 2 3 4; do ip addr add 192.168.100.$a/32 dev lo; done
ip addr add 10.200.0.9/32 dev lo
ip route add 10.60.0.0/24 dev upfgtp
ip neigh add 10.100.0.2 lladdr "$(cat /sys/class/net/n3p/address)" dev n3w
# What left n3w, per GBR flow: u32 counters on the peer's ingress.
tc qdisc add dev n3p clsact || fail "clsact on n3p"
. ./rx.sh
echo "===STATUS-BEGIN==="; ./gtpqos status --json --n3 n3w --n6 n6w --interval 0; echo "===STATUS-END==="
echo "== tree"; tc qdisc show dev n3w; tc class show dev n3w
# The loads run long enough for a guest the senders slow down (starting
# five of them takes seconds under TCG) and are stopped after the second
# reading.
LOADS=
load() { ./udpload -src $1 -dst $2:9000 -rate $3 -for 90s & LOADS="$LOADS $!"; }
phase() {
	sleep 4; echo "===STATS $1 t1==="; ./classstats -dev n3w -edt -rx n3p
	sleep 15; echo "===STATS $1 t2==="; ./classstats -dev n3w -edt -rx n3p
	n=0; for p in $LOADS; do kill -0 $p 2>/dev/null && n=$((n+1)); done; echo "RUNNING $1 $n"
	kill $LOADS; wait $LOADS 2>/dev/null; LOADS=
	sleep 1 # fq's backlog drains
}
load 10.200.0.9 10.60.0.1 7000000
phase alone
load 10.200.0.9 10.60.0.1 3000000; load 192.168.100.4 10.60.0.1 3000000
phase session
load 10.200.0.9 10.60.0.1 3000000; load 192.168.100.2 10.60.0.1 5000000; load 192.168.100.3 10.60.0.1 2000000
load 192.168.100.4 10.60.0.1 3000000; load 192.168.100.2 10.60.0.2 1500000
phase all
echo "== fq"; tc -s qdisc show dev n3w
echo "CLASSES-BEFORE $(tc class show dev n3w | grep -c '^class') $(tc class show dev n6w | grep -c '^class')"
. ./del2.sh
# UE 1's four flows left, and no session 2 (or give up after ~30 s).
for i in $(seq 300); do [ "$(entries)" -eq 4 ] && ! ./classstats -dev n3w -edt | grep -q '^session 2 ' && break; sleep 0.1; done
echo "===MAPS-AFTER==="; ./classstats -dev n3w -edt; echo "===END==="
echo "===STATUS2-BEGIN==="; ./gtpqos status --json --n3 n3w --n6 n6w --interval 0; echo "===STATUS2-END==="
echo "CLASSES-AFTER $(tc class show dev n3w | grep -c '^class') $(tc class show dev n6w | grep -c '^class')"
kill -TERM $W; wait $W
echo "== watch log"; cat watch.log
echo FREE5GC-SCENARIO-OK
`

// free5gcEDTStockScenario starts watch with backend edt on stock gtp5g
// holding free5GC's rules with a second non-GBR flow E in UE 1's session:
// the program on n3w finds the downlink flows by their sessions' SDF rules
// and (TEID, QFI), the N3 ingress program marks the uplink for n6w's.
// Then the default flow (1 Mbit/s), C (3 Mbit/s over its MBR of 2) and E
// (2 Mbit/s over its MBR of 1) run at once: gtp5g sends all three with
// QFI 1, so only the SDF rules tell C and E apart.
const free5gcEDTStockScenario = free5gcSetup + `printf 'policy:\n  backend: edt\n  non_gbr_min: 100kbit\n  default_rate: 100kbit\n' >watch.yaml
T=./gogtp5g-tunnel
. ./rules.sh
# The daemon's documented capabilities alone (no CAP_PERFMON: 6.1's
# verifier takes the program's SDF path without it).
C=-all,+net_admin,+bpf
setpriv --inh-caps=$C --ambient-caps=$C --bounding-set=$C ./gtpqos watch --config watch.yaml --n3 n3w --n6 n6w --link-rate 7500kbit --mark-mode auto --metrics-addr off >watch.log 2>&1 &
W=$!
sleep 0.5; echo "STOCK-CAPS $(awk '/^CapEff/ { print $2 }' /proc/$W/status)"
entries() { ./classstats -dev $1 -edt 2>/dev/null | grep -c '^flow '; }
rules() { ./classstats -dev n3w -edt 2>/dev/null | sed -n 's/^program .* rules //p'; }
for i in $(seq 300); do kill -0 $W 2>/dev/null || break; [ "$(entries n3w)" -ge 7 ] && [ "$(entries n6w)" -ge 1 ] && [ "$(rules)" = 2 ] && break; sleep 0.1; done
kill -0 $W || { cat watch.log; fail "watch exited at start"; }
echo "STOCK-ENTRIES $(entries n3w) $(entries n6w)"
echo "STOCK-RULES $(rules)"
echo "STOCK-N3-INGRESS $(tc filter show dev n3w ingress | grep -c gtpqos-gtpu-ingress)"
echo "STOCK-N3-EDT $(tc filter show dev n3w egress | grep -c gtpqos-edt-egress)"
echo "===STOCK-MAPS==="; ./classstats -dev n3w -edt; echo "===END==="
for a in 4 5; do ip addr add 192.168.100.$a/32 dev lo; done
ip addr add 10.200.0.9/32 dev lo
ip route add 10.60.0.0/24 dev upfgtp
ip neigh add 10.100.0.2 lladdr "$(cat /sys/class/net/n3p/address)" dev n3w
echo "===STATUS-BEGIN==="; ./gtpqos status --json --n3 n3w --n6 n6w --interval 0; echo "===STATUS-END==="
LOADS=
load() { ./udpload -src $1 -dst $2:9000 -rate $3 -for 90s & LOADS="$LOADS $!"; }
phase() {
	sleep 4; echo "===STATS $1 t1==="; ./classstats -dev n3w -edt
	sleep 15; echo "===STATS $1 t2==="; ./classstats -dev n3w -edt
	n=0; for p in $LOADS; do kill -0 $p 2>/dev/null && n=$((n+1)); done; echo "RUNNING $1 $n"
	kill $LOADS; wait $LOADS 2>/dev/null; LOADS=
}
load 10.200.0.9 10.60.0.1 1000000; load 192.168.100.4 10.60.0.1 3000000; load 192.168.100.5 10.60.0.1 2000000
phase sdf
kill -TERM $W; wait $W
echo "== watch log"; cat watch.log
# A restart adopts the pinned program and maps: its reconciles write nothing.
setpriv --inh-caps=$C --ambient-caps=$C --bounding-set=$C ./gtpqos watch --config watch.yaml --n3 n3w --n6 n6w --link-rate 7500kbit --mark-mode auto --metrics-addr 127.0.0.1:9472 >watch2.log 2>&1 &
W=$!
runs() { wget -qO- http://127.0.0.1:9472/metrics 2>/dev/null | awk -v n="gtpqos_reconcile_runs_total{dev=\"$1\",result=\"ok\"}" '$1 == n { print $2 }'; }
for i in $(seq 600); do [ "$(runs n3w)" -ge 1 ] 2>/dev/null && [ "$(runs n6w)" -ge 1 ] 2>/dev/null && break; sleep 0.1; done
sleep 5 # polls of gtp5g after the first reconcile
echo "RESTART-RUNS $(runs n3w)/$(runs n6w)"
echo "===STOCK-MAPS-2==="; ./classstats -dev n3w -edt; echo "===END==="
kill -TERM $W; wait $W
echo "===WATCH2==="; cat watch2.log; echo "===END==="
echo FREE5GC-EDT-STOCK-OK
`

// TestVMWatchFree5GCEDTStock: on stock gtp5g ($GTP5G_KO without the
// patch; a patched module skips), whose packets carry no mark, watch with
// backend edt starts with CAP_NET_ADMIN and CAP_BPF alone: n3w's program holds downlink flows keyed by (TEID,
// QFI) and each session's downlink SDF rules, n6w's holds the uplink
// flows by the marks the gtpu_ingress program it attached to n3w sets.
// UE 1's non-GBR flows C and E, which gtp5g sends with the default flow's
// QFI 1, are each found by their PDR's SDF filter and held at their own
// MBR (checkEDTStockSDF).
func TestVMWatchFree5GCEDTStock(t *testing.T) {
	out, ue1, ue2 := runFree5GCWith(t, free5gcEDTStockScenario, "stock", nil, []string{"sch_fq"}, stockFlowE)
	if !strings.Contains(out, "FREE5GC-EDT-STOCK-OK") {
		t.Fatal("scenario failed; see the guest output above")
	}
	var n3, n6 int
	if _, err := fmt.Sscanf(between(out, "STOCK-ENTRIES ", "\n"), "%d %d", &n3, &n6); err != nil || n3 < 7 || n6 == 0 {
		t.Errorf("edt map entries on n3w, n6w: %q; want the 7 downlink flows and some uplink", between(out, "STOCK-ENTRIES ", "\n"))
	}
	// CAP_NET_ADMIN (12) and CAP_BPF (39) alone.
	if got := between(out, "STOCK-CAPS ", "\n"); got != "0000008000001000" {
		t.Errorf("watch ran with effective capabilities %q, want CAP_NET_ADMIN and CAP_BPF alone (0000008000001000)", got)
	}
	if got := between(out, "STOCK-RULES ", "\n"); got != "2" {
		t.Errorf("n3w's SDF rule map holds %q TEIDs, want the two sessions' downlink TEIDs", got)
	}
	if between(out, "STOCK-N3-INGRESS ", "\n") != "1" || between(out, "STOCK-N3-EDT ", "\n") != "1" {
		t.Errorf("n3w filters: gtpu ingress %s, edt egress %s; want one each", between(out, "STOCK-N3-INGRESS ", "\n"), between(out, "STOCK-N3-EDT ", "\n"))
	}
	rep, class := shapesStatus(t, out, ue1, ue2)
	t.Logf("map entries %v; problems %v", class, rep.Problems)
	checkEDTStockSDF(t, out, class)
	checkEDTStockRestart(t, out)
}

// checkEDTStockRestart: a restarted watch reconciles both devices, polls
// gtp5g for 5 s more and writes nothing to the edt trees, maps
// or filters (the gtpu classifier's uplink marker, whose maps are not
// pinned, loads afresh): no such change in its log, the rules map as it
// was.
func checkEDTStockRestart(t *testing.T, out string) {
	t.Helper()
	runs := between(out, "RESTART-RUNS ", "\n")
	if !regexp.MustCompile(`^[1-9]\d*/[1-9]\d*$`).MatchString(runs) {
		t.Errorf("restarted watch: reconciles (n3w/n6w) %q, want both devices reconciled", runs)
	}
	log := between(out, "===WATCH2===", "===END===")
	for _, l := range strings.Split(log, "\n") {
		if regexp.MustCompile(`msg="((add|change|delete) |sync edt)`).MatchString(l) {
			t.Errorf("restarted watch wrote: %s", l)
		}
	}
	maps := between(out, "===STOCK-MAPS-2===", "===END===")
	if !strings.Contains(maps, " rules 2\n") {
		t.Errorf("after the restart the rules map holds %q TEIDs, want 2", between(maps, "rules ", "\n"))
	}
	t.Logf("restart: reconciles %s, no write", runs)
}

// stockFlowE is a second non-GBR flow of UE 1 (free5GC lists it [session
// AMBR, E], so gtp5g sends it with QFI 1, as C).
var stockFlowE = free5gc.Flow{Name: "E", QFI: 5, MBR: 1 * free5gc.Mbit, DN: "192.168.100.5"}

// checkEDTStockSDF judges the sdf phase: C and E each held at their own
// MBR (≤ MBR + 1%, and dropped at the horizon: offered above it), C above
// E's MBR, so not at E's clock, and at least half its MBR (the load reached
// the program; a sender the guest stalls loses the time: pacing gives no
// credit); the default flow's load through (at least half of it: the
// session clock, which a flow held at its MBR pushes to its own departure
// times, holds the others back too); the session within its AMBR; every
// packet found by SDF rule, under 1% unclaimed.
func checkEDTStockSDF(t *testing.T, out string, class map[string]string) {
	t.Helper()
	for _, n := range []string{"default1", "C", "E"} {
		if !strings.HasPrefix(class[n], "edt/") {
			t.Fatalf("flow %s has no map entry (%q)", n, class[n])
		}
	}
	if class["C"] == class["E"] || class["C"] == class["default1"] || class["E"] == class["default1"] {
		t.Fatalf("C %s, E %s, default %s: want three map entries", class["C"], class["E"], class["default1"])
	}
	ph := edtRates(t, out, "sdf")
	r := func(n string) rateBounds { return ph.passed[class[n]] }
	hz := func(n string) uint64 { return ph.horizon[class[n]] }
	t.Logf("sdf: default %s, C %s, E %s Mbit/s passed (offered 1, 3, 2; MBRs -, 2, 1; AMBR 5); dropped at the horizon %d, %d, %d",
		r("default1"), r("C"), r("E"), hz("default1"), hz("C"), hz("E"))
	for _, c := range []struct {
		name string
		mbr  float64
	}{{"C", 2e6}, {"E", 1e6}} {
		if r(c.name).hi > c.mbr*ceilSlack || r(c.name).lo < c.mbr*0.5 || hz(c.name) == 0 {
			t.Errorf("flow %s: %s Mbit/s, %d dropped at the horizon; want %.3f..%.3f, held there (drops)", c.name, r(c.name), hz(c.name), c.mbr*0.5/1e6, c.mbr*ceilSlack/1e6)
		}
	}
	if r("C").lo < 1e6*ceilSlack {
		t.Errorf("C %s Mbit/s: not above E's MBR", r("C"))
	}
	if r("default1").lo < 0.5e6 {
		t.Errorf("default flow: %s Mbit/s, not even half its load: the load did not reach the program", r("default1"))
	}
	if s := r("default1").hi + r("C").hi + r("E").hi; s > 5e6*ceilSlack {
		t.Errorf("session 1: up to %.3f Mbit/s > AMBR 5 + 1%%", s/1e6)
	}
	var u1, g1, s1, u2, g2, s2, n int
	fmt.Sscanf(between(between(out, "===STATS sdf t1===", "==="), "program unknown ", "\n"), "%d gtpu %d sdf %d rules %d", &u1, &g1, &s1, &n)
	fmt.Sscanf(between(between(out, "===STATS sdf t2===", "==="), "program unknown ", "\n"), "%d gtpu %d sdf %d rules %d", &u2, &g2, &s2, &n)
	t.Logf("sdf: program counted %d packets by GTP-U header, %d of them by SDF rule, %d unclaimed", g2-g1, s2-s1, u2-u1)
	if g2 <= g1 || s2-s1 != g2-g1 || float64(u2-u1) > 0.01*float64(g2-g1) {
		t.Errorf("sdf: %d packets by GTP-U header, %d by SDF rule, %d unclaimed: want all by rule, under 1%% unclaimed", g2-g1, s2-s1, u2-u1)
	}
}

// deleteCommands deletes session seid's rules from d with gogtp5g-tunnel,
// as go-upf does on a session release: PDRs, then QERs, then FARs.
func deleteCommands(d free5gc.Dump, seid uint64) string {
	var b strings.Builder
	for _, p := range d.PDRs {
		if p.SEID == seid {
			fmt.Fprintf(&b, "$T delete pdr upfgtp %d:%d || fail \"delete pdr %d:%d\"\n", p.SEID, p.ID, p.SEID, p.ID)
		}
	}
	for _, q := range d.QERs {
		if q.SEID == seid {
			fmt.Fprintf(&b, "$T delete qer upfgtp %d:%d || fail \"delete qer %d:%d\"\n", q.SEID, q.ID, q.SEID, q.ID)
		}
	}
	for _, f := range d.FARs {
		if f.SEID == seid {
			fmt.Fprintf(&b, "$T delete far upfgtp %d:%d || fail \"delete far %d:%d\"\n", f.SEID, f.ID, f.SEID, f.ID)
		}
	}
	return b.String()
}

// edtFlow is one flow's program counters in a classstats -edt reading.
type edtFlow struct{ bytes, gbrBytes, drops uint64 }

var edtFlowRE = regexp.MustCompile(`(?m)^flow (\S+) bytes (\d+) pkts \d+ gbr_bytes (\d+) gbr_pkts \d+ drops (\d+)$`)

// edtFlows parses a classstats -edt reading's flows by handle.
func edtFlows(s string) map[string]edtFlow {
	out := map[string]edtFlow{}
	for _, m := range edtFlowRE.FindAllStringSubmatch(s, -1) {
		b, _ := strconv.ParseUint(m[2], 10, 64)
		g, _ := strconv.ParseUint(m[3], 10, 64)
		d, _ := strconv.ParseUint(m[4], 10, 64)
		out[m[1]] = edtFlow{b, g, d}
	}
	return out
}

// monoWindow is the time between two readings framed by the named clock
// frames (their midpoints: EDTMONO for the program's counters, RXMONO for
// the receiver's) and its uncertainty, as readingWindow judges the
// classes' (the window must be known to 0.5%).
func monoWindow(t *testing.T, frame, r1, r2, phase string) (w, slack float64) {
	t.Helper()
	var mid, spread [2]float64
	for i, r := range []string{r1, r2} {
		m := regexp.MustCompile(frame + ` ([0-9.]+) ([0-9.]+)`).FindStringSubmatch(r)
		if m == nil {
			t.Fatalf("no %s clock reading in %s", frame, phase)
		}
		a, _ := strconv.ParseFloat(m[1], 64)
		b, _ := strconv.ParseFloat(m[2], 64)
		mid[i], spread[i] = (a+b)/2, b-a
	}
	w, slack = mid[1]-mid[0], (spread[0]+spread[1])/2
	t.Logf("%s: %s counters read %.3f ± %.4f s apart", phase, frame, w, slack)
	if w <= 0 || slack > 0.005*w {
		t.Fatalf("%s: readings %.3f s apart took %.3f and %.3f s: the window is not known to 0.5%%", phase, w, spread[0], spread[1])
	}
	return w, slack
}

// qdiscDrops parses a classstats -edt reading's qdisc drops and backlog
// bytes by parent ("root" for the tree's root, which counts its leaves').
func qdiscDrops(s string) (drops, backlog map[string]uint64) {
	drops, backlog = map[string]uint64{}, map[string]uint64{}
	for _, m := range regexp.MustCompile(`(?m)^qdisc (?:fq|htb) \S+ parent (\S+) drops (\d+) backlog (\d+)$`).FindAllStringSubmatch(s, -1) {
		drops[m[1]], _ = strconv.ParseUint(m[2], 10, 64)
		backlog[m[1]], _ = strconv.ParseUint(m[3], 10, 64)
	}
	return drops, backlog
}

// edtPhase is a phase of free5gcEDTScenario as the program and the tree
// counted it, by flow handle: what each flow's packets passed the program
// with (user IP bit/s) and of that what went to the guaranteed class;
// drops, the packets the tree's qdiscs dropped in the window, by parent;
// horizon, the packets the program dropped per flow in the window (beyond
// its delay budget: offered above its clocks' rate).
type edtPhase struct {
	passed, guaranteed map[string]rateBounds
	drops, horizon     map[string]uint64
}

func edtRates(t *testing.T, out, phase string) edtPhase {
	t.Helper()
	r1, r2 := between(out, "===STATS "+phase+" t1===", "==="), between(out, "===STATS "+phase+" t2===", "===")
	if want := map[string]string{"alone": "1", "session": "2", "all": "5", "sdf": "3"}[phase]; between(out, "RUNNING "+phase+" ", "\n") != want {
		t.Fatalf("%s: %q of the phase's %s loads still ran at the second reading", phase, between(out, "RUNNING "+phase+" ", "\n"), want)
	}
	window, slack := monoWindow(t, "EDTMONO", r1, r2, phase)
	a, b := edtFlows(r1), edtFlows(r2)
	p := edtPhase{passed: map[string]rateBounds{}, guaranteed: map[string]rateBounds{}, drops: map[string]uint64{}, horizon: map[string]uint64{}}
	bounds := func(bytes uint64) rateBounds {
		bits := float64(bytes) * 8
		return rateBounds{lo: bits / (window + slack), hi: bits / (window - slack)}
	}
	d1, _ := qdiscDrops(r1)
	d2, _ := qdiscDrops(r2)
	for c, n := range d2 {
		p.drops[c] = n - d1[c]
	}
	for h, f := range b {
		passed := f.bytes - a[h].bytes
		p.horizon[h] = f.drops - a[h].drops
		p.passed[h], p.guaranteed[h] = bounds(passed), bounds(f.gbrBytes-a[h].gbrBytes)
	}
	return p
}

// rxFlow is a GBR flow whose packets the EDT scenario counts as they
// arrive at n3p (n3w's peer): a u32 filter on n3p's ingress matching the
// gNB's TEID (outer IPv4 20 + UDP 8 + the GTP-U header's first 4 bytes)
// and the QFI gtp5g writes into the PDU Session Container (byte 42, low 6
// bits).
type rxFlow struct {
	name string
	pref int
	teid uint32
	qfi  uint8
	gbr  float64
}

// n3Encap is what an N3 packet at n3p's ingress carries around the user's
// IP packet: outer IPv4 (20), UDP (8), GTP-U with its sequence, N-PDU and
// next-extension fields and one PDU Session Container (16).
const n3Encap = 44

// rxFlows are free5gc.Quarter's GBR flows, A and B in UE 1's tunnel and D
// in UE 2's.
func rxFlows(ue1, ue2 *free5gc.Session) []rxFlow {
	var out []rxFlow
	for _, s := range []*free5gc.Session{ue1, ue2} {
		for _, f := range s.Flows {
			if f.GBR > 0 {
				out = append(out, rxFlow{name: f.Name, pref: 10 + len(out), teid: s.GNBTEID, qfi: f.QFI, gbr: float64(f.GBR)})
			}
		}
	}
	return out
}

// rxCommands adds a counting filter per flow on n3p's ingress.
func rxCommands(flows []rxFlow) string {
	var b strings.Builder
	for _, f := range flows {
		fmt.Fprintf(&b, "tc filter add dev n3p ingress pref %d protocol ip u32 match u32 %d 0xffffffff at 32 match u8 %d 0x3f at 42 action ok || fail \"rx filter %s\"\n", f.pref, f.teid, f.qfi, f.name)
	}
	return b.String()
}

var rxRE = regexp.MustCompile(`(?m)^rx pref (\d+) bytes (\d+) pkts (\d+)$`)

// rxRates are the user IP bit/s that arrived at n3p in a phase's window
// (its RXMONO frames), by filter preference: what left n3w.
func rxRates(t *testing.T, out, phase string) map[int]rateBounds {
	t.Helper()
	r1, r2 := between(out, "===STATS "+phase+" t1===", "==="), between(out, "===STATS "+phase+" t2===", "===")
	window, slack := monoWindow(t, "RXMONO", r1, r2, phase)
	read := func(r string) map[int]uint64 {
		m := map[int]uint64{}
		for _, x := range rxRE.FindAllStringSubmatch(r, -1) {
			pref, _ := strconv.Atoi(x[1])
			bytes, _ := strconv.ParseUint(x[2], 10, 64)
			pkts, _ := strconv.ParseUint(x[3], 10, 64)
			m[pref] = bytes - min(bytes, pkts*n3Encap)
		}
		return m
	}
	a, b := read(r1), read(r2)
	rates := map[int]rateBounds{}
	for pref, n := range b {
		bits := float64(n-min(n, a[pref])) * 8
		rates[pref] = rateBounds{lo: bits / (window + slack), hi: bits / (window - slack)}
	}
	return rates
}

// TestVMWatchFree5GCEDT drives `gtpqos watch` with backend edt on the real
// patched gtp5g ($GTP5G_KO, mark mode auto: pdr) with free5GC's rule
// shapes. Ceilings are judged on the program's per-flow counters (user IP
// bytes of the packets it passed into fq, read from the pinned maps): an
// upper bound of what each flow sent, so they hold for what left the
// device: the default flow alone ≤ AMBR + 1%; default + C ≤ AMBR + 1%,
// with the session alone and under congestion; every flow ≤ its MBR + 1%.
// GBR flows A, B and D under congestion are judged on what left the
// device, counted as it arrived at n3w's peer (a u32 filter per flow's
// TEID and QFI): ≥ GBR − 1%; what the meter put in the guaranteed class is
// logged. After, UE 2's released session leaves no map entry and no class
// came or went.
func TestVMWatchFree5GCEDT(t *testing.T) {
	_, q1, q2 := free5gc.Quarter()
	dir := t.TempDir()
	del, rx := dir+"/del2.sh", dir+"/rx.sh"
	if err := os.WriteFile(del, []byte(deleteCommands(free5gc.Build(false, q2), q2.SEID)), 0o644); err != nil {
		t.Fatal(err)
	}
	gbrFlows := rxFlows(q1, q2)
	if err := os.WriteFile(rx, []byte(rxCommands(gbrFlows)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, ue1, ue2 := runFree5GCWith(t, free5gcEDTScenario, "auto", map[string]string{"del2.sh": del, "rx.sh": rx},
		[]string{"sch_fq", "sch_ingress", "cls_u32", "act_gact"})
	if !strings.Contains(out, "FREE5GC-SCENARIO-OK") {
		t.Fatal("scenario failed; see the guest output above")
	}
	rep, class := shapesStatus(t, out, ue1, ue2)
	t.Logf("mark mode %s; map entries %v; problems %v", rep.MarkMode, class, rep.Problems)
	for _, n := range []string{"default1", "default2", "A", "B", "C", "D"} {
		if !strings.HasPrefix(class[n], "edt/") {
			t.Errorf("flow %s has no map entry (%q)", n, class[n])
		}
	}
	const ambr = 5e6
	def := edtRates(t, out, "alone").passed[class["default1"]]
	t.Logf("alone: default flow %s Mbit/s (AMBR 5)", def)
	if def.hi > ambr*ceilSlack {
		t.Errorf("default flow alone: up to %s Mbit/s > AMBR 5 + 1%%", def)
	}
	if def.lo < ambr*0.5 {
		t.Errorf("default flow alone: %s Mbit/s, not even half the AMBR: the load did not reach the program", def)
	}
	// The session alone (default 3 and C 3 Mbit/s offered, the link not
	// congested): the AMBR and C's MBR are what hold them back.
	sess := edtRates(t, out, "session")
	sd, sc := sess.passed[class["default1"]], sess.passed[class["C"]]
	t.Logf("session: default %s, C %s Mbit/s passed (AMBR 5, C's MBR 2)", sd, sc)
	if s := sd.hi + sc.hi; s > ambr*ceilSlack {
		t.Errorf("session: default + C up to %.3f Mbit/s > AMBR 5 + 1%%", s/1e6)
	}
	if s := sd.lo + sc.lo; s < ambr*0.5 {
		t.Errorf("session: default + C %.3f Mbit/s, not even half the AMBR: the loads did not reach the program", s/1e6)
	}
	if sc.hi > 2e6*ceilSlack {
		t.Errorf("session: C up to %s Mbit/s > MBR 2 + 1%%", sc)
	}
	ph := edtRates(t, out, "all")
	r := func(n string) rateBounds { return ph.passed[class[n]] }
	t.Logf("all: default %s, A %s, B %s, C %s, D %s Mbit/s passed; drops in the window %v", r("default1"), r("A"), r("B"), r("C"), r("D"), ph.drops)
	if s := r("default1").hi + r("C").hi; s > ambr*ceilSlack {
		t.Errorf("default + C: up to %.3f Mbit/s > AMBR 5 + 1%%", s/1e6)
	}
	for _, c := range []struct {
		name string
		mbr  float64
	}{{"A", 4.5e6}, {"B", 1.5e6}, {"C", 2e6}, {"D", 0.75e6}} {
		if r(c.name).hi > c.mbr*ceilSlack {
			t.Errorf("flow %s: up to %s Mbit/s > MBR %.3f + 1%%", c.name, r(c.name), c.mbr/1e6)
		}
	}
	// GBR flows under congestion (14.5 Mbit/s offered on 7.5), by what
	// arrived at n3w's peer.
	left := rxRates(t, out, "all")
	for _, f := range gbrFlows {
		h := class[f.name]
		t.Logf("GBR flow %s: passed %s Mbit/s, %s of it metered into the guaranteed class; %s left the device (GBR %.3f)",
			f.name, ph.passed[h], ph.guaranteed[h], left[f.pref], f.gbr/1e6)
		if left[f.pref].lo < f.gbr*0.99 {
			t.Errorf("GBR flow %s: %s Mbit/s left the device, below GBR %.3f − 1%%", f.name, left[f.pref], f.gbr/1e6)
		}
	}
	checkEDTDefaultClass(t, out)
	checkEDTRelease(t, out, class)
}

// checkEDTDefaultClass: under 1% of the packets of the all phase went to
// the default class (unknown marks).
func checkEDTDefaultClass(t *testing.T, out string) {
	t.Helper()
	all := classStats(between(out, "===STATS all t2===", "==="))
	var total uint64
	for id, v := range all {
		if id != "6765:1" {
			total += v[1]
		}
	}
	if total == 0 || float64(all["6765:2"][1]) > 0.01*float64(total) {
		t.Errorf("default class: %d of %d packets, want under 1%%", all["6765:2"][1], total)
	}
}

// checkEDTRelease: after UE 2's rules were deleted its flows (D, default2)
// and its session have no map entry, status shows UE 1's four flows only,
// and the device has the classes it had.
func checkEDTRelease(t *testing.T, out string, class map[string]string) {
	t.Helper()
	maps := between(out, "===MAPS-AFTER===", "===END===")
	left := edtFlows(maps)
	for _, n := range []string{"D", "default2"} {
		if _, ok := left[class[n]]; ok {
			t.Errorf("UE 2's flow %s (%s) still in the flows map after its session was deleted", n, class[n])
		}
	}
	for _, n := range []string{"default1", "A", "B", "C"} {
		if _, ok := left[class[n]]; !ok {
			t.Errorf("UE 1's flow %s (%s) left the flows map with UE 2's session", n, class[n])
		}
	}
	if strings.Contains(maps, "\nsession 2 ") {
		t.Errorf("session 2 still in the sessions map:\n%s", maps)
	}
	var st struct {
		Devices []struct {
			Dev         string `json:"dev"`
			FlowClasses int    `json:"flow_classes"`
		} `json:"devices"`
		Flows []struct {
			SEID  uint64 `json:"seid"`
			Class string `json:"class"`
		} `json:"flows"`
	}
	if err := json.Unmarshal([]byte(between(out, "===STATUS2-BEGIN===", "===STATUS2-END===")), &st); err != nil {
		t.Fatalf("status --json after the release: %v", err)
	}
	for _, d := range st.Devices {
		if d.Dev == "n3w" && d.FlowClasses != 4 {
			t.Errorf("status after the release: n3w has %d map entries, want UE 1's 4", d.FlowClasses)
		}
	}
	for _, f := range st.Flows {
		if f.SEID == 2 {
			t.Errorf("status after the release still shows a flow of session 2: %+v", f)
		}
	}
	before, after := between(out, "CLASSES-BEFORE ", "\n"), between(out, "CLASSES-AFTER ", "\n")
	t.Logf("classes (n3w n6w) before the release %s, after %s", before, after)
	if before == "" || before != after || !strings.HasPrefix(before, "4 ") {
		t.Errorf("classes before the release %q, after %q: want the edt tree's 4 on n3w, unchanged", before, after)
	}
}
