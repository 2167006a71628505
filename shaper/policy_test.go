package shaper

import (
	"strings"
	"testing"
)

// A static rate above the static ceil used to be cut to the ceil without a
// word; it is a policy error naming the field.
func TestCheckPolicyStaticRateAboveCeil(t *testing.T) {
	pol := DefaultPolicy(100_000_000)
	pol.Mode, pol.StaticRate, pol.StaticCeil = Static, 40_000_000, 30_000_000
	_, ps, ok := CheckPolicy(pol)
	p, bad := FirstError(ps)
	if ok || !bad || p.Field != "static_rate" || p.Kind != BadPolicy || !strings.Contains(p.Detail, "40mbit above static ceil 30mbit") {
		t.Errorf("CheckPolicy(static 40/30) = ok %v, problems %v; want a bad-policy error on static_rate", ok, ps)
	}
	pol.StaticRate = 30_000_000
	if _, ps, ok := CheckPolicy(pol); !ok {
		t.Errorf("static rate = ceil refused: %v", ps)
	}
	pol.Mode, pol.StaticRate = Aware, 40_000_000 // static knobs do not matter in aware mode
	if _, ps, ok := CheckPolicy(pol); !ok {
		t.Errorf("aware mode refused over its static knobs: %v", ps)
	}
}
