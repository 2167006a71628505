package main

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// `gtpqos apply --classifier fw` / `--leaf fq_codel` on a kernel without
// them exits 1 with one line naming the missing feature and leaves the
// device as it was. Where the kernel has both, there is nothing to refuse.
func TestIntegrationApplyRefusesMissingKernelFeature(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	ns := testenv.NewNetNS(t)
	ns.AddVethPair(t, "gqk0", "gqk1")
	ns.Run(t, "tc", "qdisc", "add", "dev", "gqk1", "root", "handle", "1:", "htb")
	_, fwErr := ns.Try("tc", "filter", "add", "dev", "gqk1", "parent", "1:", "prio", "1", "handle", "1", "fw", "classid", "1:1")
	_, fqErr := ns.Try("tc", "qdisc", "add", "dev", "gqk1", "parent", "1:1", "handle", "10:", "fq_codel")
	ns.Run(t, "tc", "qdisc", "del", "dev", "gqk1", "root")
	if fwErr == nil && fqErr == nil {
		t.Skip("this kernel has cls_fw and fq_codel: nothing to refuse")
	}
	dump := func() string {
		return ns.Run(t, "tc", "qdisc", "show", "dev", "gqk0") + ns.Run(t, "tc", "class", "show", "dev", "gqk0") + ns.Run(t, "tc", "filter", "show", "dev", "gqk0")
	}
	for _, c := range []struct {
		flag, value, want string
		missing           bool
	}{{"--classifier", "fw", "no cls_fw", fwErr != nil}, {"--leaf", "fq_codel", "no fq_codel", fqErr != nil}} {
		if !c.missing {
			continue
		}
		before := dump()
		rc, out, errs := runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gqk0", "--lock-dir", t.TempDir(), c.flag, c.value)
		if rc != 1 || out != "" {
			t.Errorf("apply %s %s: rc %d, stdout %q; want 1 and nothing applied", c.flag, c.value, rc, out)
		}
		oneLine(t, "apply "+c.flag+" "+c.value, errs, c.want)
		if after := dump(); after != before {
			t.Errorf("apply %s %s changed the device:\n%s\nwas:\n%s", c.flag, c.value, after, before)
		}
		if !strings.Contains(errs, "gqk0") {
			t.Errorf("refusal %q does not name the device", errs)
		}
	}
}
