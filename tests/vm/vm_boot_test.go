package vm

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bootScript checks the distro kernel inside the guest: release, modules
// from the package, and an HTB tree with a cls_fw filter and an fq_codel
// leaf that classifies marked pings (marked via SO_MARK, ping -m).
const bootScript = `set -e
echo "uname=$(uname -r)"
echo "modules=$(cut -d' ' -f1 /proc/modules | sort | tr '\n' ,)"
test -c /dev/net/tun && echo tun=ok
a=vma$$; b=vmb$$
ip netns add $a
ip netns add $b
ip link add va netns $a type veth peer name vb netns $b
ip -n $a addr add 10.99.0.1/24 dev va
ip -n $b addr add 10.99.0.2/24 dev vb
ip -n $a link set va up
ip -n $b link set vb up
tc -n $a qdisc add dev va root handle 1: htb default 99
tc -n $a class add dev va parent 1: classid 1:10 htb rate 10mbit
tc -n $a class add dev va parent 1: classid 1:99 htb rate 10mbit
tc -n $a qdisc add dev va parent 1:10 handle 10: fq_codel
tc -n $a filter add dev va parent 1: protocol ip prio 1 handle 7 fw classid 1:10
ip netns exec $a ping -q -c 5 -i 0.2 -m 7 10.99.0.2
ip netns exec $a ping -q -c 3 -i 0.2 10.99.0.2
echo "class10=$(tc -n $a -s class show dev va classid 1:10 | tr '\n' ' ')"
echo "class99=$(tc -n $a -s class show dev va classid 1:99 | tr '\n' ' ')"
echo "qdiscs=$(tc -n $a -s -j qdisc show dev va)"
echo "filters=$(tc -n $a filter show dev va | tr '\n' ' ')"
ip netns del $a
ip netns del $b
`

var sentRE = regexp.MustCompile(`Sent \d+ bytes (\d+) pkt`)

type tcStats struct {
	Kind    string `json:"kind"`
	Handle  string `json:"handle"`
	Packets int    `json:"packets"`
}

// TestVMBoot boots the Debian kernel and checks that it is 6.1 and that
// cls_fw and fq_codel work: marked packets land in the fw-selected class
// and its fq_codel leaf, unmarked ones in the default class.
func TestVMBoot(t *testing.T) {
	res := Run(t, Config{Script: bootScript, KernelSeries: "6.1", Timeout: 3 * time.Minute})
	if res.ExitCode != 0 {
		t.Fatalf("guest scenario exited %d:\n%s", res.ExitCode, res.Output)
	}
	kv := map[string]string{}
	for _, l := range strings.Split(res.Output, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = v
		}
	}
	if !strings.HasPrefix(kv["uname"], "6.1.") || kv["uname"] != res.Kernel {
		t.Errorf("guest uname -r = %q, want the booted Debian 6.1 kernel %s", kv["uname"], res.Kernel)
	}
	for _, m := range []string{"sch_htb", "cls_fw", "veth", "9p"} {
		if !strings.Contains(","+kv["modules"], ","+m+",") {
			t.Errorf("module %s not loaded in guest; /proc/modules: %s", m, kv["modules"])
		}
	}
	if kv["tun"] != "ok" {
		t.Errorf("/dev/net/tun missing in guest")
	}
	got := map[string]int{}
	for _, id := range []string{"10", "99"} {
		// iproute2 6.1 prints no JSON for 'class show': read "Sent B bytes P pkt".
		m := sentRE.FindStringSubmatch(kv["class"+id])
		if m == nil {
			t.Fatalf("tc -s class show classid 1:%s: no 'Sent ... pkt' in %q", id, kv["class"+id])
		}
		got["class 1:"+id], _ = strconv.Atoi(m[1])
	}
	var qdiscs []tcStats
	if err := json.Unmarshal([]byte(kv["qdiscs"]), &qdiscs); err != nil {
		t.Fatalf("tc -j qdisc show: %v\n%s", err, res.Output)
	}
	for _, q := range qdiscs {
		got["qdisc "+q.Kind+" "+q.Handle] = q.Packets
	}
	// 5 marked echo requests go to 1:10 (and its fq_codel); the unmarked
	// pings and the odd ARP go to the default class 1:99.
	if n := got["class 1:10"]; n != 5 {
		t.Errorf("fw class 1:10 sent %d packets, want the 5 marked pings; stats %v", n, got)
	}
	if n := got["qdisc fq_codel 10:"]; n != 5 {
		t.Errorf("fq_codel leaf 10: sent %d packets, want 5; stats %v", n, got)
	}
	if n := got["class 1:99"]; n < 3 {
		t.Errorf("default class 1:99 sent %d packets, want >= 3 unmarked pings; stats %v", n, got)
	}
	if !strings.Contains(kv["filters"], "fw") {
		t.Errorf("no fw filter listed: %s", kv["filters"])
	}
}
