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
	res := vm.Run(t, vm.Config{
		KO:      ko,
		Files:   map[string]string{"gtpnl.test": bin.HostPath},
		Script:  bin.Script("gtpnl.test", "-test.run", "^TestRealGTP5G$", "-test.v", "-test.count=1", "-test.timeout", "6m"),
		Timeout: 8 * time.Minute,
	})
	if res.ExitCode != 0 || !strings.Contains(res.Output, "--- PASS: TestRealGTP5G") {
		t.Fatalf("gtpnl TestRealGTP5G in the VM: exit %d, no PASS line", res.ExitCode)
	}
}
