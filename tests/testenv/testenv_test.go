package testenv

import (
	"strings"
	"testing"
)

func TestUniqueNameFitsInterfaceName(t *testing.T) {
	a, b := UniqueName("gqt-"), UniqueName("gqt-")
	if a == b {
		t.Fatalf("two calls gave the same name %q", a)
	}
	if len(a) > 15 || !strings.HasPrefix(a, "gqt-") {
		t.Fatalf("name %q: want prefix gqt- and at most 15 bytes", a)
	}
}

func TestNewNetNSIsolatedAndRemoved(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		ns := NewNetNS(t)
		name = ns.Name
		ns.AddVethPair(t, "va", "vb")
		out := ns.Run(t, "ip", "-o", "link", "show")
		if !strings.Contains(out, "va@vb") {
			t.Fatalf("veth not in netns:\n%s", out)
		}
	})
	if name == "" {
		t.Skip("inner test skipped")
	}
	if list, _ := runOut("ip", "netns", "list"); strings.Contains(list, name) {
		t.Fatalf("netns %s still present after cleanup:\n%s", name, list)
	}
}
