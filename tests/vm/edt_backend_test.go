package vm

import (
	"testing"
	"time"
)

// TestVMEdtBackend runs the edt backend's CLI tests on the Debian 6.1
// kernel with sch_fq loaded (the host has none): `gtpqos apply` with
// backend edt paces two flows of a session to their MBRs and AMBR on a
// veth, a second apply writes nothing, verify sees both flows, and reset
// leaves nothing of ours (TestIntegrationEdtPacesFlows); Update adds and
// removes a session with map writes alone and a reopened backend adopts
// the pins (TestIntegrationUpdateAdoptReset); status finds the backend
// from the tree and shows each gtp5g flow's map entry, and a reset naming
// no backend removes it (TestEdtStatusShowsFlows); apply and reset need
// CAP_BPF and CAP_NET_ADMIN alone (TestIntegrationEdtLeastPrivilege). All
// skip on the host.
func TestVMEdtBackend(t *testing.T) {
	RunGuestTests(t, GuestTests{
		Pkgs:     map[string]string{"./cmd/gtpqos/": "Edt", "./shaper/edtbackend/": "Test", "./status/": "Edt"},
		Modules:  []string{"sch_fq"},
		Timeout:  8 * time.Minute,
		MustPass: []string{"TestIntegrationEdtPacesFlows", "TestIntegrationEdtLeastPrivilege", "TestIntegrationUpdateAdoptReset", "TestEdtStatusShowsFlows"},
	})
}
