// Package vmcheck runs gtpnl's real-module test (TestRealGTP5G) inside the
// Debian-kernel VM with $GTP5G_KO loaded (tests/vm harness). It skips with
// a one-line reason without GTPQOS_VM=1, root or GTP5G_KO.
//
//	sudo GTPQOS_VM=1 GTP5G_KO=/path/gtp5g.ko go test -run TestVM -v ./gtpnl/internal/vmcheck/
package vmcheck

import (
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/tests/vm"
)

func TestVMGtpnlRealGTP5G(t *testing.T) {
	ko := vm.RequireKO(t)
	bin := vm.BuildTestBinary(t, "./gtpnl")
	gtpqos := vm.BuildBinary(t, "./cmd/gtpqos")
	// Then the CLI against the loaded module: no devices, so no flows.
	cli := "echo ===status; /run/vm/gtpqos status && echo ===json && /run/vm/gtpqos status --json && echo ===policer && /run/vm/gtpqos policer status"
	res := vm.Run(t, vm.Config{
		KO:      ko,
		Files:   map[string]string{"gtpnl.test": bin.HostPath, "gtpqos": gtpqos},
		Env:     map[string]string{"GTPQOS_BIN": "/run/vm/gtpqos"},
		Script:  "set -e\n" + bin.Script("gtpnl.test", "-test.run", "^TestRealGTP5G$", "-test.v", "-test.count=1", "-test.timeout", "6m") + "\n" + cli + "\n",
		Timeout: 8 * time.Minute,
	})
	if res.ExitCode != 0 || !strings.Contains(res.Output, "--- PASS: TestRealGTP5G") {
		t.Fatalf("gtpnl TestRealGTP5G and gtpqos status in the VM: exit %d", res.ExitCode)
	}
	for _, want := range []string{"gtpqos status --json in the device's netns: 600 flows", "gtp5g 0.10.2", "families: gtp5g v0 (id ", "(no rate-bearing QoS flows)", `"version": "0.10.2"`, "native policer: off"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("VM output lacks %q", want)
		}
	}
}
