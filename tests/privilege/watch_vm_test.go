package privilege

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/tests/free5gc"
	"github.com/free5gc/gtpqos/tests/vm"
)

// setprivSh defines caps: setpriv's flags for uid 65534 holding exactly
// the comma-separated capabilities of its argument ("" for none).
const setprivSh = `caps() {
	s=-all; for c in $(echo "$1" | tr , ' '); do s=$s,+$c; done
	echo "--reuid 65534 --regid 65534 --clear-groups --inh-caps=$s --ambient-caps=$s --bounding-set=$s"
}
`

// watchPrivScenario installs free5GC's quarter sessions in the real gtp5g
// as root (go-upf's part), prepares the host as docs/deploy.md says (a
// pin directory and a lock directory owned by the daemon's user), and runs
// 'gtpqos watch' as uid 65534: each mode with exactly its documented
// capabilities (good: start, classify flow A's pings, restart adopting the
// tree, classify again, reset), and with one capability fewer (fewer: one
// line, nothing written, the mark mode untouched).
const watchPrivScenario = `set -u
cd "$VM_WORK"
fail() { echo "FAIL: $*"; for f in w-*.log; do echo "== $f"; cat "$f"; done; exit 1; }
` + setprivSh + `ip link set lo up
ip link add n3w type veth peer name n3p; ip link set n3w up; ip link set n3p up
ip addr add 10.100.0.1/24 dev n3w
ip link add n6w type veth peer name n6p; ip link set n6w up; ip link set n6p up
./gogtp5g-link add upfgtp >link.log 2>&1 &
for i in $(seq 100); do ip link show upfgtp >/dev/null 2>&1 && break; sleep 0.1; done
ip link set upfgtp up || fail "no gtp5g device"
T=./gogtp5g-tunnel
. ./rules.sh
for a in 2 3 4; do ip addr add 192.168.100.$a/32 dev lo; done
ip route add 10.60.0.0/24 dev upfgtp
ip neigh add 10.100.0.2 lladdr "$(cat /sys/class/net/n3p/address)" dev n3w
cp gtpqos /tmp/gtpqos && chmod 0755 /tmp/gtpqos
install -d -o 65534 -g 65534 -m 0755 /tmp/wlocks /sys/fs/bpf/gtpqos
printf 'policy:\n  non_gbr_min: 100kbit\n  default_rate: 100kbit\n  pool: 0\n' >/tmp/watch.yaml
chmod 0644 /tmp/watch.yaml
# until_ SECS CMD: until CMD succeeds, for SECS seconds of wall clock at most.
until_() { end=$(($(date +%s) + $1)); until eval "$2"; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.2; done; }
markmode() { cat /proc/gtp5g/qos_mark 2>/dev/null || echo none; }
htbs() { echo "$(tc qdisc show dev n3w | grep -c htb)/$(tc qdisc show dev n6w | grep -c htb)"; }
pins() { find /sys/fs/bpf/gtpqos -type f -printf '%U:%m:%f ' | sort; }
# startw LOG CAPS CLASSIFIER: watch as the daemon, W its pid, until its mode line.
startw() {
	setpriv $(caps "$2") /tmp/gtpqos watch --config /tmp/watch.yaml --n3 n3w --n6 n6w --link-rate 7500kbit \
		--mark-mode auto --classifier "$3" --lock-dir /tmp/wlocks --metrics-addr 127.0.0.1:9479 --resync 1h >"$1" 2>&1 &
	W=$! L=$1
	until_ 60 'grep -q "msg=\"mode: " "$L" || ! kill -0 $W 2>/dev/null'
	grep -q 'msg="mode: ' "$L"
}
leaves() { tc class show dev n3w | grep -c leaf; }
metric() { wget -qO- http://127.0.0.1:9479/metrics | awk -v n="$1" '$1 == n { print $2 }'; }
runs() { metric "gtpqos_reconcile_runs_total{dev=\"$1\",result=\"ok\"}"; }
changes() { wget -qO- http://127.0.0.1:9479/metrics | awk '/^gtpqos_changes_total{dev="n3w"/ { n += $2 } END { print n + 0 }'; }
# phase NAME STEP CAPS: once both devices are reconciled, status as the
# daemon's user, 40 pings of flow A, the counters.
phase() {
	until_ 60 '[ "$(runs n3w)" -ge 1 ] 2>/dev/null && [ "$(runs n6w)" -ge 1 ] 2>/dev/null'
	echo "RUNS $1 $2 $(runs n3w)/$(runs n6w) changes $(changes) leaves $(leaves)"
	echo "===STATUS $1 $2==="; setpriv $(caps "$3") /tmp/gtpqos status --json --n3 n3w --n6 n6w --interval 0 --lock-dir /tmp/wlocks 2>&1
	echo "===END=== rc $?"
	echo "===ROOTSTATUS $1 $2==="; /tmp/gtpqos status --json --n3 n3w --n6 n6w --interval 0 2>&1; echo "===END==="
	echo "===CLASSES $1 $2 before==="; ./classstats -dev n3w; echo "===END==="
	ping -q -c 40 -i 0.05 -W 1 -I 192.168.100.2 10.60.0.1 >/dev/null 2>&1
	echo "===CLASSES $1 $2 after==="; ./classstats -dev n3w; echo "===END==="
	echo "ACLASS $1 $2 $(tc class show dev n3w | awk '/rate 3750Kbit ceil 4500Kbit/ { print $3 }')"
	echo "FILTER $1 $2 $(tc filter show dev n3w | grep -o ' id [0-9]*' | tr -d '\n')"
	echo "PINS $1 $2 $(pins)"
}
# good NAME CAPS CLASSIFIER
good() {
	startw w-$1-1.log "$2" "$3" || fail "$1: watch did not start"
	echo "MARK $1 $(markmode)"
	phase $1 1 "$2"
	kill -TERM $W; wait $W; echo "EXIT $1 1 $?"; echo "== w-$1-1.log"; cat w-$1-1.log
	startw w-$1-2.log "$2" "$3" || fail "$1: restarted watch did not start"
	phase $1 2 "$2"
	kill -TERM $W; wait $W; echo "EXIT $1 2 $?"; echo "== w-$1-2.log"; cat w-$1-2.log
	for d in n3w n6w; do setpriv $(caps "$2") /tmp/gtpqos reset --dev $d --lock-dir /tmp/wlocks >>w-$1-reset.log 2>&1 || fail "$1: reset $d"; done
	echo "RESET $1 htb=$(htbs) pins=$(pins)"; cat w-$1-reset.log
}
# fewer NAME CAPS CLASSIFIER: from an untouched device and mark mode off.
fewer() {
	[ -e /proc/gtp5g/qos_mark ] && echo off >/proc/gtp5g/qos_mark
	timeout 60 setpriv $(caps "$2") /tmp/gtpqos watch --config /tmp/watch.yaml --n3 n3w --n6 n6w --link-rate 7500kbit \
		--mark-mode auto --classifier "$3" --lock-dir /tmp/wlocks --metrics-addr off >w-$1.log 2>&1
	rc=$?
	echo "REFUSED $1 rc=$rc lines=$(wc -l <w-$1.log) htb=$(htbs) pins=$(pins) mark=$(markmode)"
	echo "===LOG $1==="; cat w-$1.log; echo "===END==="
	tc qdisc del dev n3w root 2>/dev/null; tc qdisc del dev n6w root 2>/dev/null
}
if [ -e /proc/gtp5g/qos_mark ]; then
	echo "MODULE patched"
	good fw net_admin fw
	good bpf net_admin,bpf bpf
	fewer fw-none "" fw
	fewer bpf-no-bpf net_admin bpf
	fewer bpf-no-net_admin bpf bpf
else
	echo "MODULE stock"
	good gtpu net_admin,bpf auto
	fewer gtpu-no-bpf net_admin auto
	fewer gtpu-no-net_admin bpf auto
fi
echo WATCH-PRIV-OK
`

// watchModes are the documented capabilities of each mode watchPrivScenario
// runs; fewer lists each one-fewer run and the capability it must name.
var watchModes = map[string]struct {
	patched bool
	caps    string
	fewer   map[string]string
}{
	"fw":   {true, "net_admin", map[string]string{"fw-none": "CAP_NET_ADMIN"}},
	"bpf":  {true, "net_admin,bpf", map[string]string{"bpf-no-bpf": "CAP_BPF", "bpf-no-net_admin": "CAP_NET_ADMIN"}},
	"gtpu": {false, "net_admin,bpf", map[string]string{"gtpu-no-bpf": "CAP_BPF", "gtpu-no-net_admin": "CAP_NET_ADMIN"}},
}

// TestVMWatchCapabilities runs 'gtpqos watch' as uid 65534 on the real
// gtp5g ($GTP5G_KO) in Debian's 6.1 guest with free5GC's sessions: with the
// patch, classifier fw with CAP_NET_ADMIN alone and bpf with CAP_NET_ADMIN
// + CAP_BPF; on stock gtp5g, the gtpu classifier with CAP_NET_ADMIN +
// CAP_BPF (no CAP_PERFMON: 6.1's verifier takes its programs without it).
// Each builds the tree, its status works as the same user,
// flow A's class counts A's packets, and a restart adopts the tree (the bpf
// classifier through its pins: the same program, without CAP_SYS_ADMIN) and
// classifies again; reset leaves nothing. With one capability fewer watch
// exits with one line naming it before any write: no qdisc, no pin, the
// mark mode as it was.
func TestVMWatchCapabilities(t *testing.T) {
	ko := vm.RequireKO(t)
	_, ue1, ue2 := free5gc.Quarter()
	rules := t.TempDir() + "/rules.sh"
	if err := os.WriteFile(rules, []byte(free5gc.TunnelCommands(free5gc.Build(false, ue1, ue2))), 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"gtpqos":         vm.BuildBinary(t, "./cmd/gtpqos"),
		"gogtp5g-link":   vm.BuildBinary(t, "github.com/free5gc/go-gtp5gnl/cmd/gogtp5g-link"),
		"gogtp5g-tunnel": vm.BuildBinary(t, "github.com/free5gc/go-gtp5gnl/cmd/gogtp5g-tunnel"),
		"classstats":     vm.BuildBinary(t, "./tests/free5gc/classstats"),
		"rules.sh":       rules,
	}
	res := vm.Run(t, vm.Config{Script: watchPrivScenario, Files: files, KO: ko,
		Modules: []string{"sch_ingress", "cls_bpf"}, Timeout: 10 * time.Minute})
	out := res.Output
	if res.ExitCode != 0 || !strings.Contains(out, "WATCH-PRIV-OK") {
		t.Fatalf("scenario failed (exit %d); see the guest output above", res.ExitCode)
	}
	patched := strings.Contains(out, "MODULE patched")
	a := ue1.Find("A")
	for name, m := range watchModes {
		if m.patched != patched {
			continue
		}
		checkGoodWatch(t, out, name, m.caps, a.QER)
		for run, missing := range m.fewer {
			checkFewerWatch(t, out, run, missing)
		}
	}
}

// checkGoodWatch judges one mode's good runs (see TestVMWatchCapabilities).
func checkGoodWatch(t *testing.T, out, name, caps string, qerA uint32) {
	t.Helper()
	filters := map[string]string{}
	for _, step := range []string{"1", "2"} {
		tag := name + " " + step
		if got := between(out, "EXIT "+tag+" ", "\n"); got != "0" {
			t.Errorf("%s (caps %s): watch run %s exited %q after SIGTERM, want 0", name, caps, step, got)
		}
		runs := between(out, "RUNS "+tag+" ", "\n")
		if !regexp.MustCompile(`^[1-9]\d*/[1-9]\d* `).MatchString(runs) {
			t.Errorf("%s (caps %s) run %s: reconciles (n3w/n6w) %q: want both devices reconciled", name, caps, step, runs)
		}
		class := between(out, "ACLASS "+tag+" ", "\n") // A's rates: 3.75/4.5 Mbit/s
		if root, err := flowClass(between(out, "===ROOTSTATUS "+tag+"===\n", "===END==="), 1, qerA); root != class {
			t.Errorf("%s: status as root gives flow A the class %q (%v); the tree's class at A's rates is %q", tag, root, err, class)
		}
		if class == "" {
			t.Errorf("%s (caps %s) run %s: no class at flow A's rates", name, caps, step)
			continue
		}
		checkUserStatus(t, out, tag, caps, class, qerA)
		before := classPackets(between(out, "===CLASSES "+tag+" before===", "===END==="))
		after := classPackets(between(out, "===CLASSES "+tag+" after===", "===END==="))
		got := after[class] - before[class]
		t.Logf("%s (caps %s) run %s: reconciles %s; flow A's class %s counted %d of 40 pings; filter ids%s; pins %s", name, caps, step, runs,
			class, got, between(out, "FILTER "+tag+" ", "\n"), between(out, "PINS "+tag+" ", "\n"))
		if got < 40 {
			t.Errorf("%s (caps %s) run %s: flow A's class %s counted %d packets, want the 40 pings", name, caps, step, class, got)
		}
		filters[step] = between(out, "FILTER "+tag+" ", "\n")
	}
	if name == "bpf" {
		pins := between(out, "PINS bpf 2 ", "\n")
		if !strings.Contains(pins, "65534:600:gtpqos_mark24") || !strings.Contains(pins, "65534:600:gtpqos_marks") {
			t.Errorf("bpf: pins %q, want the program and the map, uid 65534, mode 0600", pins)
		}
		if filters["1"] == "" || filters["1"] != filters["2"] {
			t.Errorf("bpf: the restarted watch did not adopt the pinned program: filter ids %q, then %q", filters["1"], filters["2"])
		}
	}
	if got := between(out, "RESET "+name+" ", "\n"); got != "htb=0/0 pins=" {
		t.Errorf("%s: after reset as uid 65534: %q, want no HTB and no pins", name, got)
	}
}

// checkUserStatus judges status run as the daemon's user, with its
// capabilities: it must work, and show flow A's class where the classifier
// is pinned (fw, bpf). The gtpu classifier's maps are not pinned: another
// process opens them by id, which needs CAP_SYS_ADMIN, so that status
// shows the flows without their classes.
func checkUserStatus(t *testing.T, out, tag, caps, class string, qerA uint32) {
	t.Helper()
	block := between(out, "===STATUS "+tag+"===\n", "===ROOTSTATUS")
	status := between(block, "", "===END===")
	if rc := between(block, "===END=== rc ", "\n"); rc != "0" {
		t.Errorf("%s: status as uid 65534 with %s: exit %q\n%s", tag, caps, rc, status)
		return
	}
	got, err := flowClass(status, 1, qerA)
	switch {
	case strings.HasPrefix(tag, "gtpu "):
		t.Logf("%s: status as uid 65534 gives flow A the class %q (%v)", tag, got, err)
	case got != class:
		t.Errorf("%s: status as uid 65534 gives flow A the class %q (%v), want %s", tag, got, err, class)
	}
}

// checkFewerWatch judges a one-fewer run: a failure in one line naming
// missing, with nothing written.
func checkFewerWatch(t *testing.T, out, run, missing string) {
	t.Helper()
	line := between(out, "REFUSED "+run+" ", "\n")
	log := strings.TrimSpace(between(out, "===LOG "+run+"===\n", "===END==="))
	t.Logf("%s: %s: %s", run, line, log)
	rc := between(line, "rc=", " ")
	if rc == "0" || rc == "124" || rc == "" {
		t.Errorf("%s: watch exit %q, want a refusal", run, rc)
	}
	if strings.Contains(log, "\n") || !strings.Contains(log, missing) {
		t.Errorf("%s: want one line naming %s, got:\n%s", run, missing, log)
	}
	if !strings.Contains(line, "htb=0/0 pins= ") {
		t.Errorf("%s: watch wrote before refusing: %s", run, line)
	}
	if m := between(line, "mark=", "\n"); m != "off" && m != "none" {
		t.Errorf("%s: mark mode %q after the refusal, want off as before", run, m)
	}
}

// flowClass is the downlink class of flow (seid, qer) in status --json.
func flowClass(status string, seid uint64, qer uint32) (string, error) {
	var rep struct {
		Flows []struct {
			SEID      uint64 `json:"seid"`
			QER       uint32 `json:"qer"`
			Direction string `json:"direction"`
			Class     string `json:"class"`
		} `json:"flows"`
	}
	if err := json.Unmarshal([]byte(status), &rep); err != nil {
		return "", err
	}
	for _, f := range rep.Flows {
		if f.SEID == seid && f.QER == qer && f.Direction == "downlink" && f.Class != "" {
			return f.Class, nil
		}
	}
	return "", os.ErrNotExist
}

var classRE = regexp.MustCompile(`(?m)^class htb (\S+) .*\n\s*Sent \d+ bytes (\d+) pkt`)

// classPackets reads classstats's output: class id -> packets.
func classPackets(s string) map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range classRE.FindAllStringSubmatch(s, -1) {
		out[m[1]], _ = strconv.ParseUint(m[2], 10, 64)
	}
	return out
}

func between(s, begin, end string) string {
	i := strings.Index(s, begin)
	if i < 0 {
		return ""
	}
	s = s[i+len(begin):]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return s
}
