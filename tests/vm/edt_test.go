package vm

import (
	"testing"
	"time"
)

// TestVMEdtPacer runs shaper/edt's tests on the Debian 6.1 kernel: the
// committed objects load and verify there (spin locks, bpf_skb_set_tstamp),
// the PROG_TEST_RUN arithmetic holds, and, with sch_fq loaded (the host
// has none), TestFqPacesOnVeth sees the departure times on the wire; stock
// gtp5g's packets are found by their sessions' SDF rules and their GTP-U
// (TEID, QFI), also with CAP_BPF and CAP_NET_ADMIN alone (TestCapabilities).
func TestVMEdtPacer(t *testing.T) {
	RunGuestTests(t, GuestTests{
		Pkgs:     map[string]string{"./shaper/edt/": "Test"},
		Modules:  []string{"sch_fq"},
		Timeout:  6 * time.Minute,
		MustPass: []string{"TestFqPacesOnVeth", "TestCapabilities", "TestGTPUKeyPacing", "TestGTPUFragments", "TestSDFFlowsApart", "TestSDFPrecedence", "TestSDFFallsToKey"},
	})
}
