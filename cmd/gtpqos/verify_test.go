package main

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// The verification itself is shaper.Verify's (tested there); the CLI
// checks its flags and names the device it cannot open.
func TestVerifyUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		rc   int
		want string
	}{
		{[]string{"verify"}, 2, "--dev IF is required"},
		{[]string{"verify", "--dev", "eth0", "--interval", "0s"}, 2, "--interval must be positive"},
		{[]string{"verify", "--dev", "eth0", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"verify", "--dev", "nosuchdev0"}, 1, "device nosuchdev0"},
	} {
		rc, _, errs := runIn(t, nil, c.args...)
		if rc != c.rc {
			t.Errorf("gtpqos %s: rc %d, want %d (stderr %q)", strings.Join(c.args, " "), rc, c.rc, errs)
		}
		oneLine(t, strings.Join(c.args, " "), errs, c.want)
	}
}

// Without gtp5g, verify used to say nothing about it. It still checks the
// tree (and fails on a foreign filter that steals packets), and says in
// one line that the module is absent.
func TestIntegrationVerifyWithoutGTP5G(t *testing.T) {
	if loaded, err := kmod.Host().Loaded(); err != nil || loaded {
		t.Skip("gtp5g is loaded here (or its state unknown): nothing to say")
	}
	testenv.RequireCmd(t, "ip", "tc")
	ns := testenv.NewNetNS(t)
	// No IPv6 neighbour discovery: nothing the classifier cannot place.
	ns.Run(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	ns.AddVethPair(t, "gqv0", "gqv1")
	if rc, out, errs := runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gqv0", "--lock-dir", t.TempDir()); rc != 0 {
		t.Fatalf("apply: rc %d\n%s%s", rc, out, errs)
	}
	rc, out, errs := runIn(t, ns, "verify", "--dev", "gqv0", "--interval", "100ms")
	if rc != 0 || strings.Count(out, "gtp5g module not loaded") != 1 {
		t.Errorf("verify: rc %d, stdout %q, stderr %q; want 0 and one line saying gtp5g is not loaded", rc, out, errs)
	}
	ns.Run(t, "tc", "filter", "add", "dev", "gqv0", "parent", "6771:", "prio", "1", "protocol", "all", "u32", "match", "u32", "0", "0", "flowid", "6771:11")
	rc, out, errs = runIn(t, ns, "verify", "--dev", "gqv0", "--interval", "100ms")
	if rc != 1 || !strings.Contains(out, "foreign u32 filter at prio 1 under 6771:0") {
		t.Errorf("verify with a foreign filter: rc %d, stdout %q, stderr %q; want 1 naming the filter", rc, out, errs)
	}
}
