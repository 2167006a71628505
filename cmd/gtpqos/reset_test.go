package main

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/devlock"
	"github.com/free5gc/gtpqos/tests/shapetest"
)

// reset on the devices of a stock-gtp5g shaped lab removes the trees and
// the GTP-U classifier's filters, and only those: the device is back to
// what it was before shaping, foreign clsact qdiscs and filters included.
// A device a running watch holds is refused; a second reset finds nothing.
func TestIntegrationResetRemovesGTPUClassifier(t *testing.T) {
	for _, name := range []string{"own-clsact", "foreign-clsact", "foreign-empty-clsact"} {
		foreign := name != "own-clsact"
		t.Run(name, func(t *testing.T) {
			l := shapetest.NewStockLab(t)
			if name == "foreign-empty-clsact" {
				// Someone else's clsact with nothing on it yet: it must
				// survive the reset even though only gtpqos filters hung on it.
				for _, dev := range []string{l.N3, l.N6} {
					l.NS.Run(t, "tc", "qdisc", "add", "dev", dev, "clsact")
				}
			}
			if name == "foreign-clsact" {
				// Someone else's clsact and filters on N3 (both hooks) and N6.
				for _, dev := range []string{l.N3, l.N6} {
					l.NS.Run(t, "tc", "qdisc", "add", "dev", dev, "clsact")
					l.NS.Run(t, "tc", "filter", "add", "dev", dev, "egress", "prio", "100", "protocol", "ip", "u32", "match", "ip", "dst", "192.0.2.1/32", "classid", "1:1")
				}
				l.NS.Run(t, "tc", "filter", "add", "dev", l.N3, "ingress", "prio", "100", "protocol", "ip", "u32", "match", "ip", "src", "192.0.2.2/32", "classid", "1:1")
			}
			type state struct{ qdisc, egress, ingress string }
			read := func(dev string) state {
				return state{l.TC(t, "qdisc", "show", "dev", dev), l.TC(t, "filter", "show", "dev", dev, "egress"), l.TC(t, "filter", "show", "dev", dev, "ingress")}
			}
			before := map[string]state{l.N3: read(l.N3), l.N6: read(l.N6)}
			// (u32 lists every hash table of the clsact on both hooks.)
			if name == "foreign-clsact" && (!strings.Contains(before[l.N3].ingress, "c0000202") || !strings.Contains(before[l.N6].egress, "c0000201")) {
				t.Fatalf("foreign filters missing from the baseline: %+v", before)
			}

			l.Shape(t)
			shaped := read(l.N3)
			// A running watch holds the device's lock: reset refuses and
			// changes nothing.
			lockDir := t.TempDir()
			lk := lockIn(t, l.NS, lockDir, l.N3, devlock.Holder{Command: "watch", Role: "n3"})
			rc, _, errs := runIn(t, l.NS, "reset", "--dev", l.N3, "--lock-dir", lockDir)
			lk.Release()
			if rc != 1 || !strings.Contains(errs, "another gtpqos watch") || strings.Count(errs, "\n") != 1 {
				t.Errorf("reset of a device a watch holds: rc %d, stderr %q; want 1 and one line naming the watch", rc, errs)
			}
			if now := read(l.N3); now != shaped {
				t.Errorf("refused reset changed N3:\n%+v\nwas:\n%+v", now, shaped)
			}
			if s := read(l.N3); !strings.Contains(s.egress, gtpu.FilterDownlink) || !strings.Contains(s.ingress, gtpu.FilterUplinkN3) || !strings.Contains(s.qdisc, "htb 6771:") {
				t.Fatalf("N3 after shaping lacks the tree or a gtpqos filter:\n%+v", s)
			}
			if s := read(l.N6); !strings.Contains(s.egress, gtpu.FilterUplinkN6) {
				t.Fatalf("N6 after shaping lacks %s:\n%+v", gtpu.FilterUplinkN6, s)
			}

			for _, dev := range []string{l.N3, l.N6} {
				rc, out, errs := runIn(t, l.NS, "reset", "--dev", dev, "--lock-dir", lockDir)
				t.Logf("reset --dev %s:\n%s", dev, out)
				if rc != 0 {
					t.Fatalf("reset --dev %s: rc %d: %s%s", dev, rc, out, errs)
				}
				want := []string{"removed the gtpqos tree (", "removed clsact egress filter gtpqos-"}
				if dev == l.N3 {
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
				rc, out, _ = runIn(t, l.NS, "reset", "--dev", dev, "--lock-dir", lockDir)
				if rc != 0 || !strings.Contains(out, "nothing removed") {
					t.Errorf("second reset --dev %s: rc %d, want 'nothing removed':\n%s", dev, rc, out)
				}
			}
		})
	}
}
