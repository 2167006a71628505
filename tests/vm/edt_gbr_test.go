package vm

import (
	"strings"
	"testing"
	"time"
)

// TestVMEdtGBRShares runs cmd/gtpqos's TestIntegrationGBRShares on
// Debian 12's 6.12 kernel with sch_fq loaded: two greedy GBR flows with
// different GBRs and MBRs next to two greedy best-effort flows on an
// oversubscribed 8 Mbit/s veth, each GBR flow at its GBR − 1% or more (at
// the share of the link the guest carried), under the edt backend and the
// HTB backend; both subtests must pass, not skip. The rates, the guest's
// stalls and the reordering are in the lines marked GBRSHARE.
func TestVMEdtGBRShares(t *testing.T) {
	Require(t)
	bin := BuildTestBinary(t, "./cmd/gtpqos/")
	const name = "bin/gtpqos.test"
	script := "set -e\n" + bin.Script(name, "-test.run", "^TestIntegrationGBRShares$", "-test.v", "-test.count=1", "-test.timeout", "4m") + "\n"
	res := Run(t, Config{Script: script, Files: map[string]string{name: bin.HostPath}, Modules: []string{"sch_fq"},
		KernelSeries: "6.12", Timeout: 6 * time.Minute})
	passed := map[string]bool{}
	for _, l := range strings.Split(res.Output, "\n") {
		if strings.Contains(l, "GBRSHARE") {
			t.Log(strings.TrimSpace(l))
		}
		if m := goTestLineRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil && m[1] == "PASS" {
			passed[m[2]] = true
		}
	}
	if res.ExitCode != 0 {
		t.Errorf("TestIntegrationGBRShares in the VM exited %d", res.ExitCode)
	}
	for _, want := range []string{"TestIntegrationGBRShares", "TestIntegrationGBRShares/edt", "TestIntegrationGBRShares/htb"} {
		if !passed[want] {
			t.Errorf("%s did not pass in the VM", want)
		}
	}
}
