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
// leaves nothing of ours (TestIntegrationEdtPacesFlows, which skips on the
// host).
func TestVMEdtBackend(t *testing.T) {
	Require(t)
	const pkg = "./cmd/gtpqos/"
	bin := BuildTestBinary(t, pkg)
	name := "bin/cmd_gtpqos.test"
	script := "set -e\n" + bin.Script(name, "-test.run", "Edt", "-test.v", "-test.count=1", "-test.timeout", "4m") + "\n"
	res := Run(t, Config{
		Script:  script,
		Files:   map[string]string{name: bin.HostPath},
		Modules: []string{"sch_fq"},
		Timeout: 6 * time.Minute,
	})
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
		t.Errorf("%s in the VM exited %d; failed: %v", pkg, res.ExitCode, failed)
	}
	if !slices.Contains(passed, "TestIntegrationEdtPacesFlows") {
		t.Errorf("TestIntegrationEdtPacesFlows did not pass in the VM (passed: %v)", passed)
	}
}
