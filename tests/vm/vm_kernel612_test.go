package vm

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kernel612GuestEnv tells the test binary in the guest that
// TestVMKernel612 started it, so that TestKernel612Guest runs.
const kernel612GuestEnv = "GTPQOS_612_GUEST"

// kernel612Script sets up two namespaces joined by a veth pair and checks,
// with the host's tools (iproute2 6.1) and the guest side of this test
// (TestKernel612Guest, netlink and cilium/ebpf), what the 6.12 kernel
// adds: fq with bands and weights, as a root qdisc and as an HTB leaf that
// passes traffic, and a TCX attachment.
const kernel612Script = `set -e
echo "uname=$(uname -r)"
a=vm612a$$; b=vm612b$$
cleanup() { ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; true; }
trap cleanup EXIT
ip netns add $a
ip netns add $b
ip link add va netns $a type veth peer name vb netns $b
ip -n $a addr add 10.98.0.1/24 dev va
ip -n $b addr add 10.98.0.2/24 dev vb
ip -n $a link set va up
ip -n $b link set vb up
guest() { ip netns exec $a env VM612_DEV=va VM612_PEER=10.98.0.2 "$@"; }
# iproute2 6.1 knows fq but not its 6.7 options: it refuses them.
if tc -n $a qdisc add dev va root fq weights 589824 196608 65536 2>/dev/null; then echo tc_fq_weights=yes; else echo tc_fq_weights=no; fi
tc -n $a qdisc del dev va root 2>/dev/null || true
tc -n $a qdisc add dev va root handle 1: fq
echo "fq_root=$(tc -n $a -d qdisc show dev va | tr '\n' ' ')"
tc -n $a qdisc del dev va root
# Root fq with weights and a priomap, set over netlink, read back.
guest VM612_STEP=fq VM612_PARENT=root VM612_HANDLE=1: $GUEST
tc -n $a qdisc del dev va root
# HTB with a weighted fq leaf passes traffic.
tc -n $a qdisc add dev va root handle 1: htb default 10
tc -n $a class add dev va parent 1: classid 1:10 htb rate 20mbit
guest VM612_STEP=fq VM612_PARENT=1:10 VM612_HANDLE=10: $GUEST
ip netns exec $a ping -q -c 10 -i 0.2 10.98.0.2
echo "htb_fq=$(tc -n $a -s -d qdisc show dev va | tr '\n' ' ')"
echo "class10=$(tc -n $a -s class show dev va classid 1:10 | tr '\n' ' ')"
tc -n $a qdisc del dev va root
# TCX: a program attached at egress sees the packets sent.
guest VM612_STEP=tcx $GUEST
`

var fqLeafRE = regexp.MustCompile(`qdisc fq 10: parent 1:10 .*?Sent \d+ bytes (\d+) pkt`)

// TestVMKernel612 boots Debian 12's backported 6.12 kernel and checks what
// the EDT backend needs from it: fq takes bands and weights (as root
// qdisc and as the leaf of an HTB class, which then passes traffic) and a
// program attaches with TCX.
func TestVMKernel612(t *testing.T) {
	if os.Getenv("GTPQOS_IN_VM") == "1" {
		t.Skip("host-side launcher; inside the VM TestKernel612Guest runs")
	}
	Require(t)
	bin := BuildTestBinary(t, "./tests/vm/")
	const name = "vm612.test"
	guest := GuestWorkDir + "/" + name + " -test.run ^TestKernel612Guest$ -test.v -test.count=1"
	res := Run(t, Config{
		KernelSeries: "6.12",
		Script:       kernel612Script,
		Env:          map[string]string{kernel612GuestEnv: "1", "GUEST": guest},
		Files:        map[string]string{name: bin.HostPath},
		Dir:          bin.PkgDir,
		Timeout:      4 * time.Minute,
	})
	if res.ExitCode != 0 {
		t.Fatalf("guest scenario exited %d:\n%s", res.ExitCode, res.Output)
	}
	kv := map[string]string{}
	for _, l := range strings.Split(res.Output, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = v
		}
	}
	if !strings.HasPrefix(kv["uname"], "6.12.") || kv["uname"] != res.Kernel {
		t.Errorf("guest uname -r = %q, want the booted Debian 6.12 kernel %s", kv["uname"], res.Kernel)
	}
	t.Logf("host tc (iproute2 6.1) takes fq weights: %s", kv["tc_fq_weights"])
	if !strings.Contains(kv["fq_root"], "qdisc fq 1: root") {
		t.Errorf("tc -d qdisc show lists no root fq: %q", kv["fq_root"])
	}
	m := fqLeafRE.FindStringSubmatch(kv["htb_fq"])
	if m == nil {
		t.Fatalf("no fq leaf 10: under 1:10 with stats in %q", kv["htb_fq"])
	}
	if n, _ := strconv.Atoi(m[1]); n < 10 {
		t.Errorf("fq leaf 10: sent %d packets, want >= the 10 pings", n)
	}
	if c := sentRE.FindStringSubmatch(kv["class10"]); c == nil {
		t.Errorf("class 1:10: no stats in %q", kv["class10"])
	} else if n, _ := strconv.Atoi(c[1]); n < 10 {
		t.Errorf("HTB class 1:10 sent %d packets, want >= the 10 pings", n)
	}
	for _, want := range []string{"--- PASS: TestKernel612Guest/fq", "--- PASS: TestKernel612Guest/tcx"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("guest output lacks %q", want)
		}
	}
	if strings.Count(res.Output, "--- PASS: TestKernel612Guest/fq") != 2 {
		t.Errorf("want the fq check to pass twice (root and HTB leaf):\n%s", res.Output)
	}
}
