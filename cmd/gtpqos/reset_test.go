package main

import (
	"context"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/free5gc/gtpqos/tests/testenv"
	"github.com/free5gc/gtpqos/watch"
)

// stockLab is a netns with an N3 and an N6 veth, shaped the way `gtpqos
// watch` shapes them on stock gtp5g: downlink tree on N3 with gtpu_egress,
// uplink tree on N6 with gtpu_ingress on N3 and mark_egress on N6.
type stockLab struct {
	ns     *testenv.NetNS
	h      *netlink.Handle
	n3, n6 string
	gc     *gtpu.Classifier
	dl, ul *htb.Tree
}

// stockTestFlows are two sessions sharing QFI 2, both directions.
func stockTestFlows() []shaper.Flow {
	var out []shaper.Flow
	for s := uint64(1); s <= 2; s++ {
		out = append(out,
			shaper.Flow{ID: shaper.FlowID{SEID: s, QERID: 1}, QFI: 2, Direction: shaper.Downlink, GBR: 2e6, MBR: 4e6, TEID: uint32(100 + s)},
			shaper.Flow{ID: shaper.FlowID{SEID: s, QERID: 2}, QFI: 2, Direction: shaper.Uplink, GBR: 1e6, MBR: 2e6, TEID: uint32(200 + s), Mark: uint32(0x100000 + s)},
		)
	}
	return out
}

func newStockLab(t *testing.T) *stockLab {
	t.Helper()
	testenv.RequireCmd(t, "ip", "tc")
	l := &stockLab{ns: testenv.NewNetNS(t), n3: "gqn3a", n6: "gqn6a"}
	l.ns.AddVethPair(t, l.n3, "gqn3b")
	l.ns.AddVethPair(t, l.n6, "gqn6b")
	h, err := netlink.NewHandleAt(l.ns.Handle)
	if err != nil {
		t.Fatalf("netlink handle in netns: %v", err)
	}
	t.Cleanup(h.Close)
	l.h = h
	return l
}

// shape plans and reconciles both trees with the GTP-U classifier, as the
// watch daemon does, and leaves everything attached (as a stopped daemon
// does). The classifier's objects are released when the test ends.
func (l *stockLab) shape(t *testing.T) {
	t.Helper()
	var dlFlows, ulFlows []shaper.Flow
	for _, f := range stockTestFlows() {
		if f.Direction == shaper.Downlink {
			dlFlows = append(dlFlows, f)
		} else {
			ulFlows = append(ulFlows, f)
		}
	}
	l.gc = gtpu.New(gtpu.Options{N3: l.n3})
	gc := l.gc
	t.Cleanup(func() { _ = gc.Close(l.h) })
	ctx := context.Background()
	pol := shaper.DefaultPolicy(100e6)
	pol.Classifier = shaper.KindGTPU
	var probs []shaper.Problem
	for _, x := range []struct {
		dev   string
		cls   classify.Classifier
		flows []shaper.Flow
		tree  **htb.Tree
	}{{l.n3, gc.Downlink(), dlFlows, &l.dl}, {l.n6, gc.Uplink(), ulFlows, &l.ul}} {
		if *x.tree, probs = htb.Plan(x.flows, pol, nil); len(probs) > 0 {
			t.Fatalf("plan %s: %v", x.dev, probs)
		}
		rec := htb.NewReconciler(l.h, x.dev, htb.WithClassifier(x.cls))
		if _, err := rec.Reconcile(ctx, *x.tree); err != nil {
			t.Fatalf("reconcile %s: %v", x.dev, err)
		}
	}
}

func (l *stockLab) tc(t *testing.T, args ...string) string {
	t.Helper()
	return directPkts.ReplaceAllString(l.ns.Run(t, "tc", args...), "")
}

func TestIntegrationResetRemovesGTPUClassifier(t *testing.T) {
	for _, name := range []string{"own-clsact", "foreign-clsact", "foreign-empty-clsact"} {
		foreign := name != "own-clsact"
		t.Run(name, func(t *testing.T) {
			l := newStockLab(t)
			if name == "foreign-empty-clsact" {
				// Someone else's clsact with nothing on it yet: it must
				// survive the reset even though only gtpqos filters hung on it.
				for _, dev := range []string{l.n3, l.n6} {
					l.ns.Run(t, "tc", "qdisc", "add", "dev", dev, "clsact")
				}
			}
			if name == "foreign-clsact" {
				// Someone else's clsact and filters on N3 (both hooks) and N6.
				for _, dev := range []string{l.n3, l.n6} {
					l.ns.Run(t, "tc", "qdisc", "add", "dev", dev, "clsact")
					l.ns.Run(t, "tc", "filter", "add", "dev", dev, "egress", "prio", "100", "protocol", "ip", "u32", "match", "ip", "dst", "192.0.2.1/32", "classid", "1:1")
				}
				l.ns.Run(t, "tc", "filter", "add", "dev", l.n3, "ingress", "prio", "100", "protocol", "ip", "u32", "match", "ip", "src", "192.0.2.2/32", "classid", "1:1")
			}
			type state struct{ qdisc, egress, ingress string }
			read := func(dev string) state {
				return state{l.tc(t, "qdisc", "show", "dev", dev), l.tc(t, "filter", "show", "dev", dev, "egress"), l.tc(t, "filter", "show", "dev", dev, "ingress")}
			}
			before := map[string]state{l.n3: read(l.n3), l.n6: read(l.n6)}
			// (u32 lists every hash table of the clsact on both hooks.)
			if name == "foreign-clsact" && (!strings.Contains(before[l.n3].ingress, "c0000202") || !strings.Contains(before[l.n6].egress, "c0000201")) {
				t.Fatalf("foreign filters missing from the baseline: %+v", before)
			}

			l.shape(t)
			shaped := read(l.n3)
			// A running watch holds the device's lock: reset refuses and
			// changes nothing.
			lockDir := t.TempDir()
			lk, err := watch.LockDevice(lockDir, l.n3)
			if err != nil {
				t.Fatal(err)
			}
			rc, _, errs := runIn(t, l.ns, "reset", "--dev", l.n3, "--lock-dir", lockDir)
			lk.Unlock()
			if rc != 1 || !strings.Contains(errs, "another gtpqos watch") || strings.Count(errs, "\n") != 1 {
				t.Errorf("reset of a device a watch holds: rc %d, stderr %q; want 1 and one line naming the watch", rc, errs)
			}
			if now := read(l.n3); now != shaped {
				t.Errorf("refused reset changed N3:\n%+v\nwas:\n%+v", now, shaped)
			}
			if s := read(l.n3); !strings.Contains(s.egress, gtpu.FilterDownlink) || !strings.Contains(s.ingress, gtpu.FilterUplinkN3) || !strings.Contains(s.qdisc, "htb 6771:") {
				t.Fatalf("N3 after shaping lacks the tree or a gtpqos filter:\n%+v", s)
			}
			if s := read(l.n6); !strings.Contains(s.egress, gtpu.FilterUplinkN6) {
				t.Fatalf("N6 after shaping lacks %s:\n%+v", gtpu.FilterUplinkN6, s)
			}

			for _, dev := range []string{l.n3, l.n6} {
				rc, out, errs := runIn(t, l.ns, "reset", "--dev", dev, "--lock-dir", lockDir)
				t.Logf("reset --dev %s:\n%s", dev, out)
				if rc != 0 {
					t.Fatalf("reset --dev %s: rc %d: %s%s", dev, rc, out, errs)
				}
				want := []string{"removed the gtpqos tree (", "removed clsact egress filter gtpqos-"}
				if dev == l.n3 {
					want = append(want, "removed clsact ingress filter "+gtpu.FilterUplinkN3)
				}
				if !foreign {
					want = append(want, "removed the clsact qdisc")
				}
				for _, w := range want {
					if !strings.Contains(out, w) {
						t.Errorf("reset --dev %s output lacks %q:\n%s", dev, w, out)
					}
				}
				if foreign && strings.Contains(out, "clsact qdisc") {
					t.Errorf("reset --dev %s claims to remove the foreign clsact:\n%s", dev, out)
				}
				got := read(dev)
				if strings.Contains(got.egress+got.ingress, gtpu.NamePrefix) {
					t.Errorf("dev %s: a gtpqos filter survived reset:\n%+v", dev, got)
				}
				if got != before[dev] {
					t.Errorf("dev %s after reset:\n%+v\nbefore shaping:\n%+v", dev, got, before[dev])
				}
				// A second reset finds nothing.
				rc, out, _ = runIn(t, l.ns, "reset", "--dev", dev, "--lock-dir", lockDir)
				if rc != 0 || !strings.Contains(out, "nothing removed") {
					t.Errorf("second reset --dev %s: rc %d, want 'nothing removed':\n%s", dev, rc, out)
				}
			}
		})
	}
}
