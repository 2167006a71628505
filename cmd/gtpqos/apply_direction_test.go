package main

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// A --direction that keeps none of the file's flows would take every class
// off the device: apply refuses it in one line, the tree unchanged, unless
// --force. A successful apply says how many flows it selected.
func TestApplyDirectionSelectingNothingIsRefused(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	ns := testenv.NewNetNS(t)
	ns.AddVethPair(t, "gqs0", "gqs1")
	locks := t.TempDir()
	rc, out, errs := runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gqs0", "--lock-dir", locks)
	if rc != 0 || !strings.Contains(out, "3 flows selected (all directions)") {
		t.Fatalf("apply: rc %d, want it to say 3 flows selected\n%s%s", rc, out, errs)
	}
	tree := func() string {
		return directPkts.ReplaceAllString(ns.Run(t, "tc", "class", "show", "dev", "gqs0")+ns.Run(t, "tc", "filter", "show", "dev", "gqs0"), "")
	}
	before := tree()
	rc, out, errs = runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gqs0", "--lock-dir", locks, "--direction", "uplink")
	if rc == 0 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "selects none of the 3 flows") {
		t.Errorf("--direction uplink on a downlink file: rc %d, stdout %q, stderr %q; want one line refusing it", rc, out, errs)
	}
	if now := tree(); now != before {
		t.Errorf("refused apply changed the tree:\nbefore:\n%s\nafter:\n%s", before, now)
	}
	rc, out, errs = runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gqs0", "--lock-dir", locks, "--direction", "uplink", "--force")
	if rc != 0 || !strings.Contains(out, "0 of 3 flows selected (uplink)") {
		t.Errorf("--force: rc %d, want it applied with 0 of 3 selected\n%s%s", rc, out, errs)
	}
}
