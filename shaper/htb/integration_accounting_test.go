package htb

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// stabRe finds the root's size table in `tc -d qdisc show`.
var stabRe = regexp.MustCompile(`qdisc htb 6771: root .*\n\s*(?:linklayer (\S+) )?overhead (-?\d+)`)

// tcStab returns the root's size-table overhead as `tc -d qdisc show`
// prints it, and whether there is one.
func (l *lab) tcStab(t testing.TB) (string, bool) {
	t.Helper()
	out := l.ns.Run(t, "tc", "-d", "qdisc", "show", "dev", l.dev)
	if !strings.Contains(out, "qdisc htb 6771: root") {
		t.Fatalf("no gtpqos root:\n%s", out)
	}
	m := stabRe.FindStringSubmatch(out)
	if m == nil {
		return "", false
	}
	return m[2], true
}

// tcOverheads returns, per class, the rate-spec overhead `tc class show`
// prints ("" for none).
func (l *lab) tcOverheads(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ln := range l.tcClasses(t) {
		f := strings.Fields(ln)
		out[f[0]] = ""
		if len(f) == 8 && f[6] == "overhead" {
			out[f[0]] = f[7]
		}
	}
	return out
}

// checkAccounting compares the kernel's size table and rate-spec
// overheads, read with tc and with Actual, with the plan.
func (l *lab) checkAccounting(t testing.TB, rec *Reconciler, want *plan.Tree) {
	t.Helper()
	stab, ok := l.tcStab(t)
	switch {
	case want.Accounting == shaper.AccountPacket && (!ok || stab != "-"+itoa(want.Overhead) && !(want.Overhead == 0 && stab == "0")):
		t.Errorf("tc: root size table %q (present %v), want overhead -%d", stab, ok, want.Overhead)
	case want.Accounting == shaper.AccountFrame && ok:
		t.Errorf("tc: root has a size table (overhead %s) under frame accounting", stab)
	}
	for id, o := range l.tcOverheads(t) {
		wantO := ""
		if id == "6771:1" && want.Overhead != 0 {
			wantO = itoa(want.Overhead)
		}
		if o != wantO {
			t.Errorf("tc: class %s overhead %q, want %q", id, o, wantO)
		}
	}
	act, err := rec.Actual(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if act.Accounting != want.Accounting || act.Overhead != want.Overhead {
		t.Errorf("Actual: accounting %s overhead %d, want %s %d", act.Accounting, act.Overhead, want.Accounting, want.Overhead)
	}
	for _, c := range act.Classes {
		d, _ := want.Find(c.Minor)
		if c.Overhead != d.Overhead {
			t.Errorf("Actual: class %x overhead %d, want %d", c.Minor, c.Overhead, d.Overhead)
		}
	}
	l.matches(t, rec, want)
}

func itoa(v uint32) string { return strings.TrimSpace(shaper.Overhead{Fixed: true, Bytes: v}.String()) }

// bytesPerPacket sends n marked datagrams and returns the bytes per packet
// the flow's class counted for them.
func (l *lab) bytesPerPacket(t testing.TB, rec *Reconciler, mark uint32, minor uint16, n, size int) uint64 {
	t.Helper()
	before := l.waitPackets(t, rec, minor, 0)
	l.send(t, mark, n, size)
	after := l.waitPackets(t, rec, minor, before.Packets+uint64(n))
	return (after.Bytes - before.Bytes) / (after.Packets - before.Packets)
}

// TestIntegrationAccounting builds the seed tree with packet accounting
// (root size table overhead -58, link class overhead 58) and checks it
// against the plan through tc and Actual, that a second run and a restarted
// Reconciler write nothing, that the classes count each packet 58 bytes
// short, and that switching to frame accounting and back changes the tree
// in place (two writes each: the root's size table and the link class),
// class counters continuing.
func TestIntegrationAccounting(t *testing.T) {
	l := newLab(t)
	rec := l.rec(Options{})
	pol := plan.DefaultPolicy(30 * mbit)
	packet := mustPlan(t, seedFlows(), pol, nil)
	if packet.Accounting != shaper.AccountPacket || packet.Overhead != 58 {
		t.Fatalf("default plan: accounting %s overhead %d, want packet 58", packet.Accounting, packet.Overhead)
	}
	mustReconcile(t, rec, packet)
	l.checkAccounting(t, rec, packet)
	if res := mustReconcile(t, rec, packet); res.Writes != 0 {
		t.Errorf("second run: %s; want 0 writes", res.Summary())
	}
	if res := mustReconcile(t, l.rec(Options{}), packet); res.Writes != 0 || !res.Adopted {
		t.Errorf("restarted: %s; want adopted with 0 writes", res.Summary())
	}
	// 200-byte UDP payload + 8 + 20 + 14 = a 242-byte frame at the qdisc.
	if got := l.bytesPerPacket(t, rec, 2, 0x10, 5, 200); got != 242-58 {
		t.Errorf("packet accounting: class counted %d bytes per 242-byte frame, want %d", got, 242-58)
	}
	before := l.waitPackets(t, rec, 0x10, 5)

	pol.Accounting = shaper.AccountFrame
	frame := mustPlan(t, seedFlows(), pol, nil)
	res := mustReconcile(t, rec, frame)
	if res.CreatedRoot || res.Writes != 2 || len(res.Changed) != 1 || res.Changed[0] != plan.LinkMinor || !hasNote(res, "switched to frame in place") {
		t.Errorf("switch to frame: %s (notes %q); want the size table and the link class changed in place, 2 writes", res.Summary(), res.Notes)
	}
	l.checkAccounting(t, rec, frame)
	if got := l.bytesPerPacket(t, rec, 2, 0x10, 5, 200); got != 242 {
		t.Errorf("frame accounting: class counted %d bytes per 242-byte frame, want 242", got)
	}
	if after := l.waitPackets(t, rec, 0x10, 0); after.Packets < before.Packets+5 {
		t.Errorf("class counters reset by the switch: %d -> %d packets", before.Packets, after.Packets)
	}
	if res := mustReconcile(t, rec, frame); res.Writes != 0 {
		t.Errorf("frame, second run: %s; want 0 writes", res.Summary())
	}

	res = mustReconcile(t, rec, packet)
	if res.CreatedRoot || res.Writes != 2 || !hasNote(res, "switched to packet in place") {
		t.Errorf("switch back to packet: %s (notes %q); want 2 writes in place", res.Summary(), res.Notes)
	}
	l.checkAccounting(t, rec, packet)

	// A fixed overhead is used as given.
	pol.Accounting, pol.Overhead = shaper.AccountPacket, shaper.Overhead{Fixed: true, Bytes: 14}
	fixed := mustPlan(t, seedFlows(), pol, nil)
	if res := mustReconcile(t, rec, fixed); res.Writes != 2 {
		t.Errorf("overhead 14: %s; want 2 writes", res.Summary())
	}
	l.checkAccounting(t, rec, fixed)
	if got := l.bytesPerPacket(t, rec, 3, 0x11, 5, 200); got != 242-14 {
		t.Errorf("overhead 14: class counted %d bytes per 242-byte frame, want %d", got, 242-14)
	}
}

// TestIntegrationAccountingDriftRepair changes the size table and the link
// class's overhead behind gtpqos's back: a full run puts both back in
// place.
func TestIntegrationAccountingDriftRepair(t *testing.T) {
	l := newLab(t)
	rec := l.rec(Options{})
	tree := mustPlan(t, seedFlows(), plan.DefaultPolicy(30*mbit), nil)
	mustReconcile(t, rec, tree)
	l.ns.Run(t, "tc", "class", "change", "dev", l.dev, "parent", "6771:", "classid", "6771:1", "htb",
		"rate", "30mbit", "ceil", "30mbit", "burst", "32k", "cburst", "32k")
	link, err := l.h.LinkByName(l.dev)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rec.tc(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.do(rootStabReq(link.Attrs().Index, &sizeSpec{Overhead: -10, LinkLayer: linkLayerEthernet})); err != nil {
		t.Fatalf("drift the size table: %v", err)
	}
	if stab, _ := l.tcStab(t); stab != "-10" {
		t.Fatalf("size table after drift: %q", stab)
	}
	res := mustReconcile(t, rec, tree)
	if res.CreatedRoot || res.Writes != 2 || len(res.Changed) != 1 {
		t.Errorf("repair: %s; want the size table and the link class repaired in place", res.Summary())
	}
	l.checkAccounting(t, rec, tree)
	if res := mustReconcile(t, rec, tree); res.Writes != 0 {
		t.Errorf("after repair: %s; want in sync", res.Summary())
	}
}

// TestIntegrationRootDefaultRebuilt: a root htb 6771: whose default is not
// gtpqos's cannot be changed (HTB has no change operation): the run
// rebuilds the tree, says why, and the tree is the plan's, with or without
// force.
func TestIntegrationRootDefaultRebuilt(t *testing.T) {
	for _, force := range []bool{false, true} {
		l := newLab(t)
		l.ns.Run(t, "tc", "qdisc", "add", "dev", l.dev, "root", "handle", "6771:", "htb", "default", "40")
		tree := mustPlan(t, seedFlows(), plan.DefaultPolicy(30*mbit), nil)
		rec := l.rec(Options{Force: force})
		res := mustReconcile(t, rec, tree)
		if !res.CreatedRoot || !hasNote(res, "HTB cannot change a root's default in place: rebuilt the tree (class counters start again)") {
			t.Errorf("force %v: %s (notes %q); want the root rebuilt, saying why", force, res.Summary(), res.Notes)
		}
		if q := l.qdiscs(t); !strings.Contains(q, "default 0x2 ") {
			t.Errorf("force %v: root after repair:\n%s", force, q)
		}
		l.checkAccounting(t, rec, tree)
		l.send(t, 3, 4, 200)
		l.waitPackets(t, rec, 0x11, 4)
		if res := mustReconcile(t, rec, tree); res.Writes != 0 {
			t.Errorf("force %v: after rebuild: %s; want in sync", force, res.Summary())
		}
	}
}

func hasNote(res Result, s string) bool {
	for _, n := range res.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
