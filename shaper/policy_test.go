package shaper

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseClassifierKind(t *testing.T) {
	for in, want := range map[string]ClassifierKind{"": KindAuto, "auto": KindAuto, "fw": KindFw, "bpf": KindBPF, "gtpu": KindGTPU} {
		if got, err := ParseClassifierKind(in); err != nil || got != want {
			t.Errorf("ParseClassifierKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"fww", "FW", "u32", "bpf "} {
		if got, err := ParseClassifierKind(in); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) {
			t.Errorf("ParseClassifierKind(%q) = %q, %v; want an error naming it", in, got, err)
		}
	}
}
