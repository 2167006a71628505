package vm

import (
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
	RunGuestTests(t, GuestTests{
		Pkgs:         map[string]string{"./cmd/gtpqos/": "^TestIntegrationGBRShares$"},
		Modules:      []string{"sch_fq"},
		KernelSeries: "6.12",
		Timeout:      6 * time.Minute,
		MustPass:     []string{"TestIntegrationGBRShares", "TestIntegrationGBRShares/edt", "TestIntegrationGBRShares/htb"},
		Log:          "GBRSHARE",
	})
}
