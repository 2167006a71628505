package vm

import (
	"strings"
	"testing"
	"time"
)

// TestVMEdtPacer runs shaper/edt's tests on the Debian 6.1 kernel: the
// committed objects load and verify there (spin locks, bpf_skb_set_tstamp),
// the PROG_TEST_RUN arithmetic holds, and, with sch_fq loaded (the host
// has none), TestFqPacesOnVeth sees the departure times on the wire.
func TestVMEdtPacer(t *testing.T) {
	Require(t)
	const pkg = "./shaper/edt/"
	bin := BuildTestBinary(t, pkg)
	name := "bin/shaper_edt.test"
	script := "set -e\n" + bin.Script(name, "-test.run", "Test", "-test.v", "-test.count=1", "-test.timeout", "4m") + "\n"
	res := Run(t, Config{
		Script:  script,
		Files:   map[string]string{name: bin.HostPath},
		Modules: []string{"sch_fq"},
		Timeout: 6 * time.Minute,
	})
	var failed, skipped []string
	passedFq := false
	for _, l := range strings.Split(res.Output, "\n") {
		m := goTestLineRE.FindStringSubmatch(l)
		if m == nil || strings.Contains(m[2], "/") {
			continue
		}
		switch {
		case m[1] == "FAIL":
			failed = append(failed, m[2])
		case m[1] == "SKIP":
			skipped = append(skipped, m[2])
		case m[2] == "TestFqPacesOnVeth":
			passedFq = true
		}
	}
	if res.ExitCode != 0 || len(failed) > 0 {
		t.Errorf("%s in the VM exited %d; failed: %v", pkg, res.ExitCode, failed)
	}
	if !passedFq {
		t.Errorf("TestFqPacesOnVeth did not pass in the VM (skipped: %v)", skipped)
	}
}
