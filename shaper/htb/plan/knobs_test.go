package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/spec"
)

// HTB's knobs, as top-level policy keys (read as htb's) or under htb:,
// are checked as the policy file is read: one line naming the key.
func TestPolicyFileRefusesBadKnobs(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"bad classifier", "link: 1mbit\npolicy: {classifier: fww}\n", `f.yaml: policy: classifier: unknown classifier "fww"`},
		{"bad burst", "link: 1mbit\npolicy: {burst: lots}\n", `f.yaml: policy: burst: invalid size "lots"`},
		{"zero-padded prio", "link: 1mbit\npolicy: {prio: 03}\n", `f.yaml: policy: prio: invalid value "03": zero-padded`},
		{"zero-padded leaf_limit", "link: 1mbit\npolicy: {leaf_limit: 0100}\n", `f.yaml: policy: leaf_limit: invalid value "0100"`},
		{"zero-padded size", "link: 1mbit\npolicy: {burst: 032k}\n", `f.yaml: policy: burst: invalid size "032k": zero-padded`},
		{"zero-padded quantum", "link: 1mbit\npolicy: {quantum: 012500}\n", `f.yaml: policy: quantum: invalid size "012500"`},
		{"bad burst under htb", "link: 1mbit\npolicy: {htb: {burst: lots}}\n", `f.yaml: policy: htb: burst: invalid size "lots"`},
		{"unknown htb key", "link: 1mbit\npolicy: {htb: {brust: 1k}}\n", `f.yaml: policy: htb: unknown key "brust" (want burst, `},
		{"given twice", "link: 1mbit\npolicy: {burst: 32k, htb: {burst: 64k}}\n", `f.yaml: policy: burst: given both at the top and under htb: give it once, as htb.burst`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := shaper.ParseFlowsFile("f.yaml", []byte(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line starting with %q", err, tc.want)
			}
		})
	}
}

// The htb: section and the old top-level keys give the same knobs.
func TestPolicyOfReadsTheHTBSection(t *testing.T) {
	want := DefaultKnobs()
	want.Burst, want.CBurst, want.Quantum, want.MaxFrame, want.Prio = 65536, 16384, 3000, 9018, 3
	want.Classifier = spec.KindBPF
	want.Leaf = LeafSpec{Kind: LeafFIFO, Limit: 200, TargetUs: 5000, IntervalUs: 50000}
	want.Pool = 7
	const knobs = "burst: 64k, cburst: 16k, quantum: 3000, max_frame: 9018, prio: 3, classifier: bpf, leaf: fifo, leaf_limit: 200, leaf_interval: 50ms, pool: 7"
	for _, in := range []string{"link: 1gbit\npolicy: {" + knobs + "}\n", "link: 1gbit\npolicy: {admission: clamp, htb: {" + knobs + "}}\n"} {
		ff, err := shaper.ParseFlowsFile("p.yaml", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		pol, err := PolicyOf(ff.Policy)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, pol.Knobs); diff != "" {
			t.Errorf("%s: knobs (-want +got):\n%s", in, diff)
		}
	}
}

// Shaper spells every knob out, so PolicyOf gives the same policy back.
func TestKnobsRoundTrip(t *testing.T) {
	p := DefaultPolicy(30e6)
	p.Burst, p.Prio, p.Pool, p.Classifier = 2000, 5, 0, spec.KindGTPU
	p.Leaf = LeafSpec{Kind: LeafFQCodel, Limit: 10, TargetUs: 0, IntervalUs: 1234}
	back, err := PolicyOf(p.Shaper())
	if err != nil || back.Knobs != p.Knobs || back.LinkRate != p.LinkRate {
		t.Errorf("round trip: %+v, %v; want %+v", back.Knobs, err, p.Knobs)
	}
}
