package main

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper/devlock"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// A running watch holds the device's lock: apply refuses with one line and
// changes nothing (the daemon would not see a hand-made change until its
// next full resync). Once the watch is gone, apply works.
func TestIntegrationApplyRefusesWatchedDevice(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	ns := testenv.NewNetNS(t)
	ns.AddVethPair(t, "gql0", "gql1")
	before := ns.Run(t, "tc", "qdisc", "show", "dev", "gql0")
	lockDir := t.TempDir()
	lk := lockIn(t, ns, lockDir, "gql0", devlock.Holder{Command: "watch", Role: "n3"})
	rc, _, errs := runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gql0", "--lock-dir", lockDir)
	if rc != 1 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "dev gql0: not applied") {
		t.Errorf("apply on a watched device: rc %d, stderr %q; want 1 and one line naming the device", rc, errs)
	}
	if now := ns.Run(t, "tc", "qdisc", "show", "dev", "gql0"); now != before {
		t.Errorf("refused apply changed the device:\n%s\nwas:\n%s", now, before)
	}
	if err := lk.Release(); err != nil {
		t.Fatal(err)
	}
	if rc, out, errs := runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gql0", "--lock-dir", lockDir); rc != 0 {
		t.Fatalf("apply after the watch stopped: rc %d\n%s%s", rc, out, errs)
	}
}

// lockIn takes dev's lock as holder would from inside ns (device names,
// and so lock files, are per network namespace).
func lockIn(t *testing.T, ns *testenv.NetNS, dir, dev string, holder devlock.Holder) *devlock.Lock {
	t.Helper()
	var lk *devlock.Lock
	var err error
	ns.Do(t, func() { lk, err = devlock.Acquire(dir, dev, holder) })
	if err != nil {
		t.Fatal(err)
	}
	return lk
}
