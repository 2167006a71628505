package shaper

import (
	"strings"
	"testing"
)

// TestLinkShareOversubscribed checks that the warning comes exactly when
// the classes under the link ask for more than it has, and names the sum,
// each part and the link (free5GC's quarter scenario at the default 1
// Mbit/s non-GBR minimum: GBRs 3.75 + 1.25 + 0.5, two sessions' non-GBR
// minimums 2 + 1, the default class 1, on 7.5 Mbit/s).
func TestLinkShareOversubscribed(t *testing.T) {
	s := LinkShare{GBR: 5_500_000, NonGBR: 3 * mbit, Default: 1 * mbit}
	if s.Sum() != 9_500_000 {
		t.Fatalf("sum %d, want 9500000", s.Sum())
	}
	p, ok := s.Oversubscribed(7_500_000)
	if !ok || p.Kind != Oversubscribed || p.Severity != Warning {
		t.Fatalf("9.5 Mbit/s on 7.5: got %v, %v; want an oversubscribed warning", p, ok)
	}
	for _, want := range []string{FormatRate(9_500_000), "GBRs " + FormatRate(5_500_000), "non-GBR minimums " + FormatRate(3*mbit),
		"default class " + FormatRate(1*mbit), "on a " + FormatRate(7_500_000) + " link"} {
		if !strings.Contains(p.Detail, want) {
			t.Errorf("detail %q does not name %q", p.Detail, want)
		}
	}
	if strings.Contains(p.Detail, "static rates "+FormatRate(0)) {
		t.Errorf("detail %q names a zero part", p.Detail)
	}
	if p, ok := s.Oversubscribed(9_500_000); ok {
		t.Errorf("9.5 Mbit/s on 9.5: warned %v", p)
	}
	// The free5GC VM scenario's policy: non-GBR minimums of 100 kbit/s fit.
	small := LinkShare{GBR: 5_500_000, NonGBR: 300_000, Default: 100_000}
	if p, ok := small.Oversubscribed(7_500_000); ok {
		t.Errorf("5.9 Mbit/s on 7.5: warned %v", p)
	}
	if got := s.Add(small).Sub(small); got != s {
		t.Errorf("add then sub: %+v, want %+v", got, s)
	}
	if got := small.Sub(s); got.Sum() != 0 {
		t.Errorf("sub below zero: %+v, want zero", got)
	}
}
