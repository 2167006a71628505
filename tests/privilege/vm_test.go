package privilege

import (
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/tests/vm"
)

// privilegeScenario applies the seed flows as uid 65534 on Debian's 6.1
// kernel with each classifier and capability set, and prints one line
// per run: what each mode needs there.
const privilegeScenario = `
cp gtpqos /tmp/gtpqos && chmod 0755 /tmp/gtpqos
mkdir -p /tmp/pbpf && mount -t bpf bpf /tmp/pbpf
mkdir -m 0755 /tmp/plocks && chown 65534:65534 /tmp/plocks
ip netns add priv
ip -n priv link add gqp0 type veth peer name gqp1
ip -n priv link set gqp0 up; ip -n priv link set gqp1 up
for cls in fw bpf; do
  printf 'link: 30mbit\npolicy: {mode: aware, classifier: %s}\nflows:\n  - {name: A, seid: 1, qer: 1, qfi: 2, gbr: 15mbit, mbr: 18mbit, mark: 2}\n' $cls > /tmp/flows-$cls.yaml
  chmod 0644 /tmp/flows-$cls.yaml
  for caps in net_admin net_admin,bpf bpf; do
    set=-all; for c in $(echo $caps | tr , ' '); do set=$set,+$c; done
    out=$(GTPQOS_BPF_PIN_DIR=/tmp/pbpf/gtpqos ip netns exec priv setpriv --reuid 65534 --regid 65534 --clear-groups \
      --inh-caps=$set --ambient-caps=$set --bounding-set=$set /tmp/gtpqos apply -f /tmp/flows-$cls.yaml --dev gqp0 --lock-dir /tmp/plocks 2>&1 | tail -1)
    rc=$?
    again=$(GTPQOS_BPF_PIN_DIR=/tmp/pbpf/gtpqos ip netns exec priv setpriv --reuid 65534 --regid 65534 --clear-groups \
      --inh-caps=$set --ambient-caps=$set --bounding-set=$set /tmp/gtpqos reset --dev gqp0 --lock-dir /tmp/plocks 2>&1 | tail -1)
    echo "PRIV $cls $caps: apply: $out | reset: $again"
    ip netns exec priv tc qdisc del dev gqp0 root 2>/dev/null || true
  done
done
echo PRIVILEGE-SCENARIO-OK
`

// TestVMCapabilities measures, on the VM's 6.1 kernel, that the fw
// classifier works with CAP_NET_ADMIN alone and the bpf classifier with
// CAP_NET_ADMIN and CAP_BPF (apply, then reset adopting by pin), and that
// CAP_BPF alone is refused.
func TestVMCapabilities(t *testing.T) {
	files := map[string]string{"gtpqos": vm.BuildBinary(t, "./cmd/gtpqos")}
	res := vm.Run(t, vm.Config{Script: privilegeScenario, Files: files, Timeout: 5 * time.Minute})
	out := res.Output
	if res.ExitCode != 0 || !strings.Contains(out, "PRIVILEGE-SCENARIO-OK") {
		t.Fatalf("scenario rc %d:\n%s", res.ExitCode, out)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "PRIV "); i >= 0 {
			l = l[i:]
			t.Log(l)
			f := strings.SplitN(l, ": ", 2)
			lines[f[0]] = f[1]
		}
	}
	for _, ok := range []string{"PRIV fw net_admin", "PRIV bpf net_admin,bpf"} {
		if !strings.Contains(lines[ok], "removed the gtpqos tree") {
			t.Errorf("%s: want apply and reset to work: %q", ok, lines[ok])
		}
	}
	if !strings.Contains(lines["PRIV bpf net_admin"], "missing CAP_BPF") {
		t.Errorf("bpf with CAP_NET_ADMIN alone: want a line naming CAP_BPF: %q", lines["PRIV bpf net_admin"])
	}
	for _, cls := range []string{"fw", "bpf"} {
		if l := lines["PRIV "+cls+" bpf"]; !strings.Contains(l, "missing CAP_NET_ADMIN") {
			t.Errorf("%s with CAP_BPF alone: want a line naming CAP_NET_ADMIN: %q", cls, l)
		}
	}
}
