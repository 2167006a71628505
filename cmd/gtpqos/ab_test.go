package main

import (
	"bytes"
	"strings"
	"testing"
)

// ab's errors in what was asked for exit 2 with one line under the
// command's name; an arm file or a device that cannot be opened exits 1
// with one line. None of these builds a lab or writes to a device.
func TestABExitStatus(t *testing.T) {
	arm := "../../examples/seed-aware.yaml"
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ab", "--lab", "--window", "10", arm}, 2, "gtpqos ab: --window \"10\""},
		{[]string{"ab", "--tcp", arm}, 2, "gtpqos ab: --tcp, --traffic, --no-marks and --lab-pdrs need --lab"},
		{[]string{"ab", arm}, 2, "gtpqos ab: give --lab, or --dev IFACE"},
		{[]string{"ab", "--lab", "--classifier", "nope", arm}, 2, "gtpqos ab: --classifier"},
		{[]string{"ab", "--lab", "--sweep", "payload=x"}, 2, "gtpqos ab: --sweep: payload \"x\""},
		{[]string{"ab", "--sweep", "payload=64"}, 2, "gtpqos ab: --sweep runs its own scenarios in the lab"},
		{[]string{"ab", "--lab", "--backend", "htb,nope", arm}, 2, "gtpqos ab: --backend \"htb,nope\": unknown backend \"nope\""},
		{[]string{"ab", "--lab", "--backend", "edt,edt", "nope.yaml"}, 2, "gtpqos ab: --backend \"edt,edt\": backend edt given twice"},
		{[]string{"ab", "--bogus"}, 2, "gtpqos ab: flag provided but not defined"},
		{[]string{"ab", "--lab", "nope.yaml"}, 1, "arm \"nope.yaml\""},
		{[]string{"ab", "--dev", "gtpqos-none0", arm}, 1, "device gtpqos-none0: "},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != c.code || !strings.HasPrefix(errb.String(), c.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line starting %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

func TestABHelpListsFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"ab", "-h"}, &out, &errb); code != 0 {
		t.Fatalf("ab -h: exit %d, stderr %q", code, errb.String())
	}
	for _, f := range []string{"usage: gtpqos ab", "-lab", "-demo", "-sweep", "-replot", "-lab-pdrs", "-tolerance", "-backend"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("ab -h does not show %s", f)
		}
	}
}
