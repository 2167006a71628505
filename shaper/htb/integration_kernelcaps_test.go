package htb

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// dump is the device's whole tc state: qdiscs (without their counters),
// classes and filters.
func (l *lab) dump(t testing.TB) string {
	t.Helper()
	var classes []string
	for _, c := range strings.Split(l.ns.Run(t, "tc", "class", "show", "dev", l.dev), "\n") {
		if strings.HasPrefix(c, "class htb ") { // fq_codel lists its active flows as classes
			classes = append(classes, c)
		}
	}
	sort.Strings(classes)
	return l.qdiscs(t) + strings.Join(classes, "\n") + "\n" + l.ns.Run(t, "tc", "filter", "show", "dev", l.dev)
}

// tcHas says, with tc on the lab's peer device (never the shaped one),
// whether the kernel takes a fw filter and an fq_codel qdisc: the ground
// truth the backend's own probe is checked against.
func (l *lab) tcHas(t testing.TB) (fw, fqCodel bool) {
	t.Helper()
	peer := "gqb0"
	l.ns.Run(t, "tc", "qdisc", "add", "dev", peer, "root", "handle", "1:", "htb")
	defer l.ns.Try("tc", "qdisc", "del", "dev", peer, "root")
	l.ns.Run(t, "tc", "class", "add", "dev", peer, "parent", "1:", "classid", "1:1", "htb", "rate", "1mbit")
	_, err := l.ns.Try("tc", "filter", "add", "dev", peer, "parent", "1:", "prio", "1", "handle", "1", "fw", "classid", "1:1")
	fw = err == nil
	_, err = l.ns.Try("tc", "qdisc", "add", "dev", peer, "parent", "1:1", "handle", "10:", "fq_codel")
	return fw, err == nil
}

// An explicit classifier fw or leaf fq_codel on a kernel without them
// used to be found out after the root and classes were written (on an
// empty device: a tree without a classifier). The backend now probes the
// kernel in a namespace of its own first: where the feature is missing
// (this host), Apply and Precheck fail with one line naming it and the
// device is exactly as it was, empty or holding a tree; where it exists
// (the Debian VM), the same Apply builds the tree with it.
func TestIntegrationExplicitKindsCheckedBeforeWriting(t *testing.T) {
	l := newLab(t)
	f := probedFeatures()
	if !f.known {
		t.Skipf("the kernel probe could not run here: %s", f.why)
	}
	hasFw, hasFQ := l.tcHas(t)
	if (f.fw == nil) != hasFw || (f.fqCodel == nil) != hasFQ {
		t.Fatalf("probe: fw %v, fq_codel %v; tc says fw %v, fq_codel %v", f.fw, f.fqCodel, hasFw, hasFQ)
	}
	if os.Getenv("GTPQOS_IN_VM") != "" && !(hasFw && hasFQ) {
		t.Fatalf("the Debian VM kernel must have cls_fw and fq_codel (tc: fw %v, fq_codel %v)", hasFw, hasFQ)
	}
	ctx := context.Background()
	pol := plan.DefaultPolicy(30 * mbit)
	for _, tc := range []struct {
		name    string
		opts    Options
		feature string
		has     bool
		shows   func(dump string) bool
	}{
		{"classifier fw", Options{Classifier: classify.KindFw, Leaf: plan.LeafFIFO}, "no cls_fw", hasFw,
			func(d string) bool { return strings.Contains(d, " fw ") }},
		{"leaf fq_codel", Options{Leaf: plan.LeafFQCodel}, "no fq_codel qdisc", hasFQ,
			func(d string) bool { return strings.Count(d, "qdisc fq_codel") == 4 }},
	} {
		for _, start := range []string{"empty device", "gtpqos tree"} {
			t.Run(tc.name+"/"+start, func(t *testing.T) {
				l.ns.Try("tc", "qdisc", "del", "dev", l.dev, "root")
				if start == "gtpqos tree" {
					auto := l.open(Options{Leaf: plan.LeafFIFO, Classifier: classify.KindBPF})
					if _, err := auto.Apply(ctx, seedFlows()[:2], pol.Shaper(), shaper.ApplyOptions{Strict: true}); err != nil {
						t.Fatal(err)
					}
				}
				before := l.dump(t)
				be := l.open(tc.opts)
				perr := be.Precheck(ctx, pol.Shaper())
				rep, err := be.Apply(ctx, seedFlows(), pol.Shaper(), shaper.ApplyOptions{Strict: true})
				if !tc.has {
					for what, e := range map[string]error{"Apply": err, "Precheck": perr} {
						if e == nil || !strings.Contains(e.Error(), tc.feature) || !strings.Contains(e.Error(), l.dev) || strings.Contains(e.Error(), "\n") {
							t.Errorf("%s without the feature: %v; want one line naming the device and %q", what, e, tc.feature)
						}
					}
					if rep.Writes != 0 {
						t.Errorf("refused apply made %d writes", rep.Writes)
					}
					if after := l.dump(t); after != before {
						t.Errorf("refused apply changed the device:\n%s\nwas:\n%s", after, before)
					}
					return
				}
				if err != nil || perr != nil {
					t.Fatalf("apply with %s on a kernel that has it: %v (precheck %v)", tc.name, err, perr)
				}
				if d := l.dump(t); !tc.shows(d) {
					t.Errorf("tree built with %s does not show it:\n%s", tc.name, d)
				}
			})
		}
	}
}
