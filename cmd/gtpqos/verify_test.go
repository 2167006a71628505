package main

import (
	"strings"
	"testing"
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
