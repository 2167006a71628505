package mtu

import (
	"strings"
	"testing"
)

// gtp5g's default device MTU (go-upf's upfgtp: 1464) on a 1500-byte N3:
// 1508 bytes, two fragments per full-size packet; 1456 fits.
func TestCheck(t *testing.T) {
	w := Check("upfgtp", 1464, "eth1", 1500)
	for _, want := range []string{"1464", "1508", "1500", "to 1456 or less", "eth1"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if w := Check("upfgtp", 1456, "eth1", 1500); w != "" {
		t.Errorf("1456 on 1500 warned: %s", w)
	}
	if w := Check("upfgtp", 1464, "eth1", 9000); w != "" {
		t.Errorf("jumbo N3 warned: %s", w)
	}
}
