package shaper_test

import (
	"testing"

	"github.com/free5gc/gtpqos/internal/gtpubpf"
	"github.com/free5gc/gtpqos/shaper"
)

// TestKindGTPUMatchesGtpubpf keeps shaper.KindGTPU, which the parsers
// accept, equal to the kind internal/gtpubpf's classifier reports.
func TestKindGTPUMatchesGtpubpf(t *testing.T) {
	if gtpubpf.Kind != shaper.KindGTPU {
		t.Errorf("gtpubpf.Kind %q, shaper.KindGTPU %q", gtpubpf.Kind, shaper.KindGTPU)
	}
}
