package spec

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseKind(t *testing.T) {
	for in, want := range map[string]Kind{"": KindAuto, "auto": KindAuto, "fw": KindFw, "bpf": KindBPF, "gtpu": KindGTPU} {
		if got, err := ParseKind(in); err != nil || got != want {
			t.Errorf("ParseKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"fww", "FW", "u32", "bpf "} {
		if got, err := ParseKind(in); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) {
			t.Errorf("ParseKind(%q) = %q, %v; want an error naming it", in, got, err)
		}
	}
}
