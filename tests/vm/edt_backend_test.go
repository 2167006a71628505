package vm

import (
	"slices"
	"strings"
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
	Require(t)
	files, script := map[string]string{}, "set -e\n"
	for pkg, run := range map[string]string{"./cmd/gtpqos/": "Edt", "./shaper/edtbackend/": "Test", "./status/": "Edt"} {
		bin := BuildTestBinary(t, pkg)
		name := "bin/" + strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_") + ".test"
		files[name] = bin.HostPath
		script += bin.Script(name, "-test.run", run, "-test.v", "-test.count=1", "-test.timeout", "3m") + "\n"
	}
	res := Run(t, Config{Script: script, Files: files, Modules: []string{"sch_fq"}, Timeout: 8 * time.Minute})
	var failed, passed []string
	for _, l := range strings.Split(res.Output, "\n") {
		m := goTestLineRE.FindStringSubmatch(l)
		if m == nil || strings.Contains(m[2], "/") {
			continue
		}
		switch m[1] {
		case "FAIL":
			failed = append(failed, m[2])
		case "PASS":
			passed = append(passed, m[2])
		}
	}
	if res.ExitCode != 0 || len(failed) > 0 {
		t.Errorf("the edt tests in the VM exited %d; failed: %v", res.ExitCode, failed)
	}
	for _, want := range []string{"TestIntegrationEdtPacesFlows", "TestIntegrationEdtLeastPrivilege", "TestIntegrationUpdateAdoptReset", "TestEdtStatusShowsFlows"} {
		if !slices.Contains(passed, want) {
			t.Errorf("%s did not pass in the VM (passed: %v)", want, passed)
		}
	}
}
