package watch

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/tests/vm"
)

// watchScenario runs inside the Debian-kernel VM with gtp5g loaded: a UPF
// gtp5g device and an N3 veth, `gtpqos watch` started before any rule, then
// the seed's session (three flows, a session-AMBR QER and the default path)
// added through go-gtp5gnl's gogtp5g-tunnel, as go-upf would, and deleted
// again; downlink pings through gtp5g must land in their flows' classes; then gtp5g is unloaded and loaded again under the running daemon.
const watchScenario = `set -u
cd "$VM_WORK"
fail() { echo "FAIL: $*"; echo "== watch log"; cat watch.log; exit 1; }
ip link add n3w type veth peer name n3p
ip link set n3w up
ip link set n3p up
ip addr add 10.100.0.1/24 dev n3w
ip link add n6w type veth peer name n6p
ip link set n6w up
ip link set n6p up
ip addr add 10.200.0.1/24 dev n6w
./gogtp5g-link add upfgtp >link.log 2>&1 &
L=$!
for i in $(seq 100); do ip link show upfgtp >/dev/null 2>&1 && break; sleep 0.1; done
ip link set upfgtp up || fail "no gtp5g device"
./gtpqos watch --n3 n3w --n6 n6w --link-rate 30mbit --poll 300ms --resync 2s --mark-mode auto >watch.log 2>&1 &
W=$!
# The mode line comes once Start returned: the devices' locks are held.
# (A fixed sleep let a second instance that started first, on a loaded
# host, take the lock and run as the daemon, in the foreground.)
for i in $(seq 300); do grep -q 'msg="mode: ' watch.log && break; kill -0 $W || break; sleep 0.1; done
kill -0 $W || fail "watch exited at start"
grep -q 'msg="mode: ' watch.log || fail "watch did not finish starting in 30 s"
# A second instance on the same device refuses to start, in one line.
timeout 60 ./gtpqos watch --n3 n3w --link-rate 30mbit --metrics-addr off >second.out 2>&1
rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <second.out)" -eq 1 ] && grep -q 'already managed by another gtpqos watch' second.out ||
	{ cat second.out; fail "second instance: exit $rc, want 1 with one line saying the device is taken"; }
echo "second instance refused: $(cat second.out)"
T=./gogtp5g-tunnel
$T add far upfgtp 1:1 --action 2 --hdr-creation 256 100 10.100.0.2 2152 || fail "add far"
$T add qer upfgtp 1:1 --gate-status 0 --qfi 9 --mbr-ul 20000 --mbr-dl 20000 || fail "add ambr qer"
$T add qer upfgtp 1:2 --gate-status 0 --qfi 2 --gbr-ul 15000 --gbr-dl 15000 --mbr-ul 18000 --mbr-dl 18000 || fail "add qer 2"
$T add qer upfgtp 1:3 --gate-status 0 --qfi 3 --gbr-ul 5000 --gbr-dl 5000 --mbr-ul 6000 --mbr-dl 6000 || fail "add qer 3"
$T add qer upfgtp 1:4 --gate-status 0 --qfi 4 --mbr-ul 30000 --mbr-dl 30000 || fail "add qer 4"
$T add qer upfgtp 1:5 --gate-status 0 --qfi 9 || fail "add default qer"
$T add pdr upfgtp 1:2 --pcd 100 --ue-ipv4 10.60.0.1 --sdf-desp 'permit out ip from 10.200.0.2 to 10.60.0.1' --far-id 1 --qer-id 2 || fail "add pdr 2"
$T add pdr upfgtp 1:3 --pcd 100 --ue-ipv4 10.60.0.1 --sdf-desp 'permit out ip from 10.200.0.3 to 10.60.0.1' --far-id 1 --qer-id 3 || fail "add pdr 3"
$T add pdr upfgtp 1:4 --pcd 100 --ue-ipv4 10.60.0.1 --sdf-desp 'permit out ip from 10.200.0.4 to 10.60.0.1' --far-id 1 --qer-id 4 --qer-id 1 || fail "add pdr 4"
$T add pdr upfgtp 1:5 --pcd 255 --ue-ipv4 10.60.0.1 --far-id 1 --qer-id 5 --qer-id 1 || fail "add default pdr"
# Uplink: flow A's QER on a PDR with the UPF's F-TEID (GTP-U from the gNB).
$T add far upfgtp 1:2 --action 2 || fail "add uplink far"
$T add pdr upfgtp 1:12 --pcd 100 --f-teid 200 10.100.0.1 --hdr-rm 0 --far-id 2 --qer-id 2 || fail "add uplink pdr"
# The tree without the pool's spare classes (idle: prio 7, 8 kbit/s).
classes() { tc class show dev n3w | grep -v 'prio 7 rate 8Kbit ceil 8Kbit'; }
waitfor() { for i in $(seq 150); do n=$(classes | grep -c "$1"); [ "$n" -eq "$2" ] && return 0; sleep 0.1; done; return 1; }
waitfor 'rate 15Mbit ceil 18Mbit' 1 || fail "flow A class (15/18) did not appear"
waitfor 'rate 5Mbit ceil 6Mbit' 1 || fail "flow B class (5/6) did not appear"
waitfor 'ceil 20Mbit' 3 || fail "session AMBR class and, under it, flow C and the default flow (ceil 20) did not appear"
echo "== classes after add"; classes
for i in $(seq 150); do tc class show dev n6w | grep -q 'rate 15Mbit ceil 18Mbit' && break; sleep 0.1; done
tc class show dev n6w | grep -q 'rate 15Mbit ceil 18Mbit' || fail "uplink class for flow A (15/18) did not appear on N6"
echo "== N6 classes after add"; tc class show dev n6w
grep -q 'msg="sync .*dev=n6w' watch.log || fail "no classifier entry for the uplink flow on N6"
# Downlink traffic through the real gtp5g datapath: from the three DN
# addresses to the UE, encapsulated by gtp5g toward the gNB (10.100.0.2,
# the N3 peer): each flow's class must count its packets (patched: the
# mark gtp5g sets; stock: TEID+QFI from the GTP-U header).
for a in 2 3 4 5; do ip addr add 10.200.0.$a/32 dev lo; done
ip route add 10.60.0.0/24 dev upfgtp
ip neigh add 10.100.0.2 lladdr "$(cat /sys/class/net/n3p/address)" dev n3w
# .5 matches no flow's SDF: the default path's PDR, the default flow's class.
for a in 2 3 4 5; do ping -q -c 5 -i 0.05 -W 1 -I 10.200.0.$a 10.60.0.1 >/dev/null 2>&1; done
cid() { classes | grep 'leaf' | grep "$1" | awk '{print $3}'; } # leaf: not the session class
sent() { tc -s class show dev n3w | awk -v c="class htb $1 " 'index($0, c) == 1 { getline; print $2 }'; }
# Flow C and the default flow both sit at 1/20 under the session class.
for f in 'rate 15Mbit ceil 18Mbit' 'rate 5Mbit ceil 6Mbit' 'rate 1Mbit ceil 20Mbit'; do
	for c in $(cid "$f"); do
		b=$(sent "$c")
		echo "flow class $c ($f): sent $b bytes"
		[ "${b:-0}" -gt 0 ] || fail "class $c ($f) counted no traffic: gtp5g's packets not classified"
	done
done
[ "$(cid 'rate 1Mbit ceil 20Mbit' | wc -l)" -eq 2 ] || fail "want two leaf classes at 1/20: flow C and the default flow"
$T delete pdr upfgtp 1:2; $T delete pdr upfgtp 1:3; $T delete pdr upfgtp 1:4; $T delete pdr upfgtp 1:5; $T delete pdr upfgtp 1:12
$T delete far upfgtp 1:2
for q in 1 2 3 4 5; do $T delete qer upfgtp 1:$q; done
$T delete far upfgtp 1:1
waitfor 'class htb' 2 || fail "flow classes not removed after the session's rules were deleted"
echo "== classes after delete"; classes
[ "$(tc class show dev n6w | grep -v 'prio 7 rate 8Kbit ceil 8Kbit' | grep -c 'class htb')" -eq 2 ] || fail "uplink class not removed from N6"
# gtp5g unloaded and loaded again under the running daemon: it waits,
# then rebuilds from the new module's rules.
kill $L 2>/dev/null; ip link del upfgtp 2>/dev/null
rmmod gtp5g || fail "rmmod gtp5g"
sleep 3
kill -0 $W || fail "watch exited when gtp5g was unloaded"
insmod "$GTP5G_GUEST_KO" || fail "insmod gtp5g again"
./gogtp5g-link add upfgtp >>link.log 2>&1 &
L=$!
for i in $(seq 100); do ip link show upfgtp >/dev/null 2>&1 && break; sleep 0.1; done
ip link set upfgtp up || fail "no gtp5g device after reload"
$T add far upfgtp 7:1 --action 2 --hdr-creation 256 200 10.100.0.2 2152 || fail "add far after reload"
$T add qer upfgtp 7:2 --gate-status 0 --qfi 2 --gbr-ul 7000 --gbr-dl 7000 --mbr-ul 9000 --mbr-dl 9000 || fail "add qer after reload"
$T add pdr upfgtp 7:2 --pcd 100 --ue-ipv4 10.60.0.7 --far-id 1 --qer-id 2 || fail "add pdr after reload"
waitfor 'rate 7Mbit ceil 9Mbit' 1 || fail "no class for the session added after gtp5g was reloaded"
echo "== classes after gtp5g reload"; classes
if [ -e /proc/gtp5g/qos_mark ]; then
	m=$(cat /proc/gtp5g/qos_mark)
	[ "$m" = pdr ] || [ "$m" = flow ] || fail "mark mode '$m' after gtp5g reload, want pdr or flow (set again by watch, mark mode auto)"
	echo "mark mode after reload: $m"
fi
echo "SIGTERM at $(date +%T)"
kill -TERM $W
wait $W
echo "watch exit $? at $(date +%T)"
classes | grep -q 'class htb 6771:1 ' && echo "tree left in place after SIGTERM"
echo "== watch log"; cat watch.log
echo WATCH-SCENARIO-OK
`

// TestVMWatchRealGTP5G runs `gtpqos watch` against the real gtp5g module
// ($GTP5G_KO, patched or stock) in the Debian-kernel VM: classes appear
// for the seed's flows with no manual step, the session AMBR becomes a
// parent class, flow A's uplink class appears on N6, gtp5g's downlink packets are counted by their flows'
// classes, and deleting the session's rules removes the classes.
// Without GTP5G_KO (or outside 'make vm-test') it skips with one line.
func TestVMWatchRealGTP5G(t *testing.T) {
	ko := vm.RequireKO(t)
	files := map[string]string{
		"gtpqos":         vm.BuildBinary(t, "./cmd/gtpqos"),
		"gogtp5g-link":   vm.BuildBinary(t, "github.com/free5gc/go-gtp5gnl/cmd/gogtp5g-link"),
		"gogtp5g-tunnel": vm.BuildBinary(t, "github.com/free5gc/go-gtp5gnl/cmd/gogtp5g-tunnel"),
	}
	// The guest holds the module under its own file name.
	env := map[string]string{"GTP5G_GUEST_KO": vm.GuestWorkDir + "/.vm/" + filepath.Base(ko)}
	res := vm.Run(t, vm.Config{Script: watchScenario, Files: files, KO: ko, Env: env, Timeout: 8 * time.Minute})
	out := res.Output
	if res.ExitCode != 0 || !strings.Contains(out, "WATCH-SCENARIO-OK") {
		t.Fatalf("scenario failed (exit %d); see the guest output above", res.ExitCode)
	}
	if n := strings.Count(out, "mode: "); n != 1 {
		t.Errorf("watch logged %d mode lines, want exactly one", n)
	}
	for _, want := range []string{"watch exit 0", "tree left in place after SIGTERM", "qer=2", "qfi=2", "seid=1",
		"retrying until it works", "working again"} {
		if !strings.Contains(out, want) {
			t.Errorf("guest output lacks %q", want)
		}
	}
}

// eventsScenario runs `gtpqos watch` on the patched gtp5g and reads its
// metrics: after the start's dump, adding, changing and deleting a
// session's rules reach the classes without another dump; events lost
// while the daemon is stopped (its small events buffer overflows) cost
// exactly one dump, which brings every class in, and the gap they leave in
// the sequence numbers is not counted as a second loss; removing the gtp5g
// device costs one more dump, which takes its sessions' classes away. A PDR
// without a FAR id is refused on the way.
const eventsScenario = `set -u
cd "$VM_WORK"
fail() { echo "FAIL: $*"; echo "== watch log"; cat watch.log; exit 1; }
ip link set lo up
ip link add n3w type veth peer name n3p
ip link set n3w up
ip link set n3p up
./gogtp5g-link add upfgtp >link.log 2>&1 &
for i in $(seq 100); do ip link show upfgtp >/dev/null 2>&1 && break; sleep 0.1; done
ip link set upfgtp up || fail "no gtp5g device"
[ -e /proc/gtp5g/qos_mark ] || { echo "EVENTS-NOT-SUPPORTED"; exit 0; }
# A small events buffer, so that a stopped daemon misses events.
./gtpqos watch --n3 n3w --link-rate 1gbit --mark-mode auto --resync 1h --events-buffer 4k --metrics-addr 127.0.0.1:9470 >watch.log 2>&1 &
W=$!
metric() { wget -qO- http://127.0.0.1:9470/metrics | awk -v n="$1" '$1 == n { print $2 }'; }
for i in $(seq 200); do d=$(metric gtpqos_source_dumps_total); [ -n "$d" ] && break; sleep 0.1; done
[ "$d" = 1 ] || fail "dumps after start: '$d', want 1"
T=./gogtp5g-tunnel
session() { # session S GBR MBR (kbit/s): a FAR, a QER and a downlink PDR
	$T add far upfgtp $1:1 --action 2 --hdr-creation 256 $1 10.100.0.2 2152 &&
	$T add qer upfgtp $1:1 --gate-status 0 --qfi 2 --gbr-ul $2 --gbr-dl $2 --mbr-ul $3 --mbr-dl $3 &&
	$T add pdr upfgtp $1:1 --pcd 100 --ue-ipv4 10.60.$(($1 / 250)).$(($1 % 250 + 1)) --far-id 1 --qer-id 1
}
# The tree without the pool's spare classes (idle: prio 7, 8 kbit/s).
classes() { tc class show dev n3w | grep -v 'prio 7 rate 8Kbit ceil 8Kbit'; }
waitfor() { for i in $(seq 300); do n=$(classes | grep -c "$1"); [ "$n" -eq "$2" ] && return 0; sleep 0.1; done; return 1; }
session 1 3000 4000 || fail "add session 1"
waitfor 'rate 3Mbit ceil 4Mbit' 1 || fail "no class for session 1"
$T mod qer upfgtp 1:1 --gate-status 0 --qfi 2 --gbr-ul 5000 --gbr-dl 5000 --mbr-ul 6000 --mbr-dl 6000 || fail "mod qer"
waitfor 'rate 5Mbit ceil 6Mbit' 1 || fail "session 1's class did not follow its QER"
$T delete pdr upfgtp 1:1 && $T delete qer upfgtp 1:1 && $T delete far upfgtp 1:1 || fail "delete session 1"
waitfor 'rate 5Mbit ceil 6Mbit' 0 || fail "session 1's class not removed"
# A PDR without a FAR id is refused (a failed request sends no event);
# stock gtp5g dereferences the id it does not have.
if $T add pdr upfgtp 99:1 --pcd 100 --ue-ipv4 10.60.9.9 >pdr.log 2>&1; then fail "a PDR without a FAR id was accepted"; fi
echo "PDR-WITHOUT-FAR: $(head -c 200 pdr.log)"
echo "EVENTS $(metric 'gtpqos_events_total{kind="change"}') DUMPS-AFTER-CHANGES $(metric gtpqos_source_dumps_total)"
kill -STOP $W
for s in $(seq 2 9); do session $s 1000 2000 || fail "add session $s"; done
kill -CONT $W
waitfor 'rate 1Mbit ceil 2Mbit' 8 || fail "the 8 sessions added while watch was stopped did not all get classes"
# The next event's sequence number skips the lost ones: that loss was
# reported already and costs no second dump.
session 10 1000 2000 || fail "add session 10"
waitfor 'rate 1Mbit ceil 2Mbit' 9 || fail "no class for the session added after the loss"
sleep 2
l=$(metric 'gtpqos_resyncs_total{reason="lost-events"}')
echo "DUMPS-AFTER-LOSS $(metric gtpqos_source_dumps_total) LOST ${l:-0}"
# Removing the gtp5g device frees its rules without an event each: the
# module tells the listeners to dump, and the sessions' classes go.
ip link del upfgtp || fail "delete the gtp5g device"
waitfor 'rate 1Mbit ceil 2Mbit' 0 || fail "the removed device's sessions kept their classes"
echo "DUMPS-AFTER-DEVICE-GONE $(metric gtpqos_source_dumps_total) X"
kill -TERM $W
wait $W
echo "== watch log"; cat watch.log
echo EVENTS-SCENARIO-OK
`

// TestVMWatchEventsWithoutDumps runs `gtpqos watch` on the real patched
// gtp5g ($GTP5G_KO) and counts its dumps of gtp5g's rules: a session's
// add, change and delete are handled from events alone, and events lost
// to an overflowing socket cost exactly one dump. A stock module has no
// events: the test skips with one line.
func TestVMWatchEventsWithoutDumps(t *testing.T) {
	ko := vm.RequireKO(t)
	files := map[string]string{
		"gtpqos":         vm.BuildBinary(t, "./cmd/gtpqos"),
		"gogtp5g-link":   vm.BuildBinary(t, "github.com/free5gc/go-gtp5gnl/cmd/gogtp5g-link"),
		"gogtp5g-tunnel": vm.BuildBinary(t, "github.com/free5gc/go-gtp5gnl/cmd/gogtp5g-tunnel"),
	}
	res := vm.Run(t, vm.Config{Script: eventsScenario, Files: files, KO: ko, Timeout: 8 * time.Minute})
	out := res.Output
	if strings.Contains(out, "EVENTS-NOT-SUPPORTED") {
		t.Skip("GTP5G_KO is a stock gtp5g: no QoS events to follow")
	}
	if res.ExitCode != 0 || !strings.Contains(out, "EVENTS-SCENARIO-OK") {
		t.Fatalf("scenario failed (exit %d); see the guest output above", res.ExitCode)
	}
	counts := func(re string) (a, b int) {
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("guest output lacks %q", re)
		}
		a, _ = strconv.Atoi(m[1])
		b, _ = strconv.Atoi(m[2])
		return a, b
	}
	events, dumps := counts(`EVENTS (\d+) DUMPS-AFTER-CHANGES (\d+)`)
	if dumps != 1 || events != 7 {
		t.Errorf("after a session's add, change and delete: %d dumps and %d events; want 1 dump (the start's) and 7 events (one per rule written)", dumps, events)
	}
	dumps, lost := counts(`DUMPS-AFTER-LOSS (\d+) LOST (\d+)`)
	if dumps != 2 || lost != 1 {
		t.Errorf("after events were lost: %d dumps, %d lost-events resyncs; want 2 dumps (start, one for the loss) and 1 resync", dumps, lost)
	}
	if dumps, _ := counts(`DUMPS-AFTER-DEVICE-GONE (\d+) (X)`); dumps != 3 {
		t.Errorf("after the gtp5g device was removed: %d dumps, want 3 (one more, for the removal)", dumps)
	}
}
