package vm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
	"github.com/free5gc/gtpqos/tests/gtp5gtest"
)

// The arms with gtp5g's native MBR policer (/proc/gtp5g/qos) on.
//
// abArmPolicer is "native policer on, no HTB". 'gtpqos ab --dev' measures
// per-flow rates from HTB class counters, so this arm still installs a tree,
// abCountOnlyFile: the same contracts under a static policy whose classes
// never shape (rate = ceil = 4× the offered per-flow rate, link above the
// sum). Its HTB only counts; the arm's name says so in the table.
//
// abArmAwarePolicer is the aware tree with the policer on as well.
const (
	abCountOnlyFile   = "testdata/ab-policer-count-only.yaml"
	abArmPolicer      = "policer-noHTB(HTB-counts-only)"
	abArmAwarePolicer = "aware+policer"
)

// abArmSpecs returns gtpqos ab's arm arguments, each setting the policer
// explicitly (ab runs the arms interleaved, and an arm without a policer
// setting would inherit the previous arm's). The policer arms come first:
// gtpqos ab's seed acceptance judges the last static-mode and the last
// aware-mode arm, which must be the plain static and aware arms (the
// count-only arm is static-mode too).
func abArmSpecs(static, aware, countOnly string) []string {
	return []string{
		abArmPolicer + "=" + countOnly + ",policer=on",
		abArmAwarePolicer + "=" + aware + ",policer=on",
		"static=" + static + ",policer=off",
		"aware=" + aware + ",policer=off",
	}
}

// TestABCountOnlyArm checks, on the host, that the count-only flows file
// has the contracts and marks of the test's static/aware arms, and that its
// tree cannot shape the offered traffic: the planner reports no problem
// (no admission refusal, no oversubscription), and every flow class's rate
// and ceil are at least 3× the offered per-flow rate under a link at least
// as high as their sum.
func TestABCountOnlyArm(t *testing.T) {
	co, err := shaper.LoadFlowsFile(abCountOnlyFile)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "static.yaml")
	if err := os.WriteFile(p, []byte(abArmYAML("static")), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := shaper.LoadFlowsFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(st.Flows, co.Flows); d != "" {
		t.Errorf("%s: flows differ from the static/aware arms' (-arms +count-only):\n%s", abCountOnlyFile, d)
	}
	if co.Policy.Mode != shaper.Static {
		t.Errorf("%s: mode %v, want static (every class the same, contracts ignored)", abCountOnlyFile, co.Policy.Mode)
	}
	pol, err := plan.PolicyOf(co.Policy)
	if err != nil {
		t.Fatal(err)
	}
	tree, probs := plan.Plan(co.Flows, pol, nil)
	for _, pr := range probs {
		t.Errorf("%s: planner problem %v on %s (%s): %s", abCountOnlyFile, pr.Kind, pr.Name, pr.Field, pr.Detail)
	}
	if tree == nil {
		t.Fatalf("%s: no tree", abCountOnlyFile)
	}
	offered := uint64(abOfferMbps * 1e6)
	var sum uint64
	n := 0
	for _, c := range tree.Classes {
		if c.Role != shaper.RoleFlow {
			continue
		}
		n++
		sum += c.Rate
		if c.Rate < 3*offered || c.Ceil < c.Rate {
			t.Errorf("%s: class %s rate %d ceil %d bit/s, want both >= 3 × %d offered", abCountOnlyFile, c.Name, c.Rate, c.Ceil, offered)
		}
	}
	if n != 3 {
		t.Errorf("%s: %d flow classes, want 3", abCountOnlyFile, n)
	}
	if tree.LinkRate < sum {
		t.Errorf("%s: link %d bit/s below the classes' %d", abCountOnlyFile, tree.LinkRate, sum)
	}
}

// checkPolicerArms asserts what is robust for the policer arms (goodput in
// Mbit/s per arm and flow). The policer caps A and B at their MBRs (+5%)
// in both arms. In the policer-only arm it lets them through up to their
// MBRs (-10%), and C, whose MBR is its offered rate, passes at least 90% of
// it: the count-only tree did not shape (the other arms' link is 7.5 Mbit/s).
// The policer does not protect GBR: with no HTB nothing is congested here,
// so A's GBR is not asserted for the policer-only arm (docs/design.md's VM table:
// with the policer and one shared class, A and B miss GBR). With the aware
// tree as well, A still gets its GBR (-5%).
func checkPolicerArms(t *testing.T, got map[string]map[string]float64) {
	t.Helper()
	gbrA, mbrA, mbrB := 15*abScale, 18*abScale, 6*abScale
	for _, arm := range []string{abArmPolicer, abArmAwarePolicer} {
		for _, f := range []struct {
			name string
			mbr  float64
		}{{"A", mbrA}, {"B", mbrB}} {
			if g := got[arm][f.name]; g <= 0 || g > 1.05*f.mbr {
				t.Errorf("arm %s: flow %s %.3f Mbit/s, want above 0 and at most its MBR %.3g (+5%%): the native policer caps MBR",
					arm, f.name, g, f.mbr)
			}
		}
	}
	for _, f := range []struct {
		name string
		min  float64
	}{{"A", 0.9 * mbrA}, {"B", 0.9 * mbrB}, {"C", 0.9 * abOfferMbps}} {
		if g := got[abArmPolicer][f.name]; g < f.min {
			t.Errorf("arm %s: flow %s %.3f Mbit/s, want at least %.3g: with only the policer and a count-only tree it should pass up to its MBR",
				abArmPolicer, f.name, g, f.min)
		}
	}
	if a := got[abArmAwarePolicer]["A"]; a < 0.95*gbrA {
		t.Errorf("arm %s: flow A %.3f Mbit/s, want its GBR %.3g (-5%%)", abArmAwarePolicer, a, gbrA)
	}
}

// scaleQERs replaces session 1's QERs (flows A, B, C, programmed at the
// seed's full rates by programUPF) with their versions at scale, so that
// gtp5g's native policer caps at the same MBRs as the arms' flows files.
// gtp5g builds the policers from the MBR on update as on add.
func (l *gtp5gLab) scaleQERs(t *testing.T, scale float64) {
	t.Helper()
	for i, q := range []gtp5gtest.QER{flowA, flowB, flowC} {
		q.GBRKbps = uint64(float64(q.GBRKbps) * scale)
		q.MBRKbps = uint64(float64(q.MBRKbps) * scale)
		l.upf.UpdateQER(t, 1, i+1, q)
	}
}
