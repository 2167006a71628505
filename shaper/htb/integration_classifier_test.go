package htb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// TestIntegrationClassifiers applies the seed with each classifier the
// kernel supports, checks each mark lands in its class, and switches to the
// other classifier, which must remove the first.
func TestIntegrationClassifiers(t *testing.T) {
	l := newLab(t)
	tree := mustPlan(t, seedFlows(), plan.DefaultPolicy(30*mbit), nil)
	// Create the root once so probes have a qdisc to work on.
	mustReconcile(t, l.rec(Options{Classifier: classify.KindBPF}), tree)
	env := l.classifierEnv(t)
	var sent uint64
	for _, k := range []classify.Kind{classify.KindFw, classify.KindBPF, classify.KindFw} {
		t.Run(string(k), func(t *testing.T) {
			if err := l.rec(Options{}).builtin(k).(classify.Prober).Probe(context.Background(), env); err != nil {
				t.Skipf("kernel lacks classifier %s: %v", k, err)
			}
			rec := l.rec(Options{Classifier: k})
			res := mustReconcile(t, rec, tree)
			if res.ClassifierKind != k {
				t.Fatalf("classifier %s in use, want %s", res.ClassifierKind, k)
			}
			filters := l.ns.Run(t, "tc", "filter", "show", "dev", l.dev)
			other := map[classify.Kind]string{classify.KindFw: " bpf ", classify.KindBPF: " fw "}[k]
			if strings.Contains(filters, other) {
				t.Errorf("old classifier left behind:\n%s", filters)
			}
			sent += 3
			for i, mark := range []uint32{2, 3, 4} {
				l.send(t, mark, 3, 300)
				l.waitPackets(t, rec, uint16(0x10+i), sent)
			}
			// Bits 24-31 are not the gtp5g patch's (bit 31: framed
			// route): the classifier must ignore them.
			sent += 3
			for i, mark := range []uint32{0x80000002, 0xFF000003, 0x01000004} {
				l.send(t, mark, 3, 300)
				l.waitPackets(t, rec, uint16(0x10+i), sent)
			}
			got, err := rec.builtin(k).Bindings(context.Background(), env)
			if err != nil || len(got) != 3 {
				t.Errorf("bindings %v, %v; want 3", got, err)
			}
			if res := mustReconcile(t, rec, tree); !res.InSync() {
				t.Errorf("second apply with %s: %s", k, res.Summary())
			}
		})
	}
}

// TestIntegrationLeaves switches leaves between fq_codel and FIFO where the
// kernel has fq_codel.
func TestIntegrationLeaves(t *testing.T) {
	l := newLab(t)
	tree := mustPlan(t, seedFlows(), plan.DefaultPolicy(30*mbit), nil)
	res := mustReconcile(t, l.rec(Options{}), tree)
	if res.LeafKind == plan.LeafFIFO {
		if !strings.Contains(res.String(), "fq_codel not available") {
			t.Errorf("FIFO fallback not reported: %s", res)
		}
		// Each leaf class has a bfifo of its ceil × delay budget, in bytes.
		q := l.ns.Run(t, "tc", "qdisc", "show", "dev", l.dev)
		for _, c := range tree.Classes {
			want := fmt.Sprintf("bfifo %x: parent %s limit %db", c.Minor, tree.Handle(c.Minor), c.QueueLimit)
			if c.QueueLimit != 0 && !strings.Contains(q, want) {
				t.Errorf("want %q:\n%s", want, q)
			}
		}
		t.Skip("kernel lacks fq_codel: FIFO fallback checked, fq_codel switch skipped")
	}
	if q := l.ns.Run(t, "tc", "qdisc", "show", "dev", l.dev); strings.Count(q, "fq_codel") != 4 || !strings.Contains(q, "limit 1000p") {
		t.Errorf("want 4 fq_codel leaves with limit 1000:\n%s", q)
	}
	res = mustReconcile(t, l.rec(Options{Leaf: plan.LeafFIFO}), tree)
	if len(res.Leaves) != 4 {
		t.Errorf("to FIFO: %s; want 4 leaves replaced", res.Summary())
	}
	if q := l.ns.Run(t, "tc", "qdisc", "show", "dev", l.dev); strings.Contains(q, "fq_codel") {
		t.Errorf("fq_codel left after switching to FIFO:\n%s", q)
	}
	res = mustReconcile(t, l.rec(Options{Leaf: plan.LeafFQCodel}), tree)
	if len(res.Leaves) != 4 {
		t.Errorf("back to fq_codel: %s; want 4 leaves", res.Summary())
	}
	if res := mustReconcile(t, l.rec(Options{}), tree); !res.InSync() {
		t.Errorf("auto after fq_codel: %s; want in sync", res.Summary())
	}
}

// TestIntegrationUnknownClassifierNoChange checks that a reconcile with an
// unknown classifier kind (forced, or the tree's) fails before it changes
// anything on the device.
func TestIntegrationUnknownClassifierNoChange(t *testing.T) {
	l := newLab(t)
	before := l.qdiscs(t)
	tree := mustPlan(t, seedFlows(), plan.DefaultPolicy(30*mbit), nil)
	bad := *tree
	bad.Classifier = "fww"
	for name, run := range map[string]func() error{
		"forced": func() error {
			_, err := l.rec(Options{Classifier: "fww"}).Reconcile(context.Background(), tree)
			return err
		},
		"tree": func() error {
			_, err := l.rec(Options{}).Reconcile(context.Background(), &bad)
			return err
		},
		"gtpu without Options.Custom": func() error {
			_, err := l.rec(Options{Classifier: classify.KindGTPU}).Reconcile(context.Background(), tree)
			return err
		},
	} {
		err := run()
		if err == nil || !strings.Contains(err.Error(), "unknown classifier") {
			t.Errorf("%s: error %v, want unknown classifier", name, err)
		}
		if after := l.qdiscs(t); after != before {
			t.Errorf("%s: device changed by a failed reconcile:\nbefore:\n%safter:\n%s", name, before, after)
		}
	}
}

// TestIntegrationBPFReplacesUnmaskedProgram installs the older mark program
// (whole 32-bit mark, filter name "gtpqos_mark") and checks that a reconcile
// replaces it with the masking one instead of adopting it.
func TestIntegrationBPFReplacesUnmaskedProgram(t *testing.T) {
	l := newLab(t)
	tree := mustPlan(t, seedFlows(), plan.DefaultPolicy(30*mbit), nil)
	mustReconcile(t, l.rec(Options{Classifier: classify.KindBPF}), tree)
	env := l.classifierEnv(t)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// The older program: the mark program without the AND of the mark
	// with shaper.MarkMask.
	old := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R1, 8, asm.Word), // __sk_buff.mark
		asm.StoreMem(asm.RFP, -4, asm.R2, asm.Word),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "miss"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.StoreMem(asm.R6, 72, asm.R1, asm.Word), // __sk_buff.tc_classid
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
		asm.Mov.Imm(asm.R0, -1).WithSymbol("miss"),
		asm.Return(),
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "GPL", Instructions: old})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: env.Link.Attrs().Index, Parent: env.Root, Handle: 1,
			Priority: classify.BPFPrio, Protocol: unix.ETH_P_ALL},
		ClassId: env.Root, Fd: p.FD(), Name: "gtpqos_mark", DirectAction: true,
	}
	if err := l.h.FilterReplace(f); err != nil {
		t.Fatal(err)
	}
	rec := l.rec(Options{Classifier: classify.KindBPF})
	res := mustReconcile(t, rec, tree)
	if !strings.Contains(res.String(), "replaced the older cls_bpf mark classifier") {
		t.Errorf("no note about the replaced program: %s", res)
	}
	if fs := l.ns.Run(t, "tc", "filter", "show", "dev", l.dev); !strings.Contains(fs, "gtpqos_mark24") {
		t.Fatalf("filters after reconcile:\n%s\nwant the masking program gtpqos_mark24", fs)
	}
	l.send(t, 0x80000002, 3, 300)
	l.waitPackets(t, rec, 0x10, 3)
	if res := mustReconcile(t, rec, tree); !res.InSync() {
		t.Errorf("second apply: %s", res.Summary())
	}
}

// TestIntegrationFwReplacesUnmaskedFilters installs a fw filter without a
// mask (all 32 bits, as older versions did) and checks that a reconcile
// re-creates the chain with MarkMask, so bits 24-31 are ignored.
func TestIntegrationFwReplacesUnmaskedFilters(t *testing.T) {
	l := newLab(t)
	tree := mustPlan(t, seedFlows(), plan.DefaultPolicy(30*mbit), nil)
	mustReconcile(t, l.rec(Options{Classifier: classify.KindBPF}), tree)
	env := l.classifierEnv(t)
	if err := classify.NewFw().Probe(context.Background(), env); err != nil {
		t.Skipf("kernel lacks cls_fw: %v", err)
	}
	rec := l.rec(Options{Classifier: classify.KindFw})
	mustReconcile(t, rec, tree)
	// Replace the chain by an unmasked one.
	if err := classify.NewFw().Remove(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	old := &netlink.FwFilter{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: env.Link.Attrs().Index, Parent: env.Root, Handle: 2,
			Priority: classify.FwPrio, Protocol: unix.ETH_P_ALL},
		ClassId: tree.ClassID(0x10),
	}
	if err := l.h.FilterAdd(old); err != nil {
		t.Fatal(err)
	}
	res := mustReconcile(t, l.rec(Options{Classifier: classify.KindFw}), tree)
	if !strings.Contains(res.String(), "re-created the fw filters with mask") {
		t.Errorf("no note about the re-created chain: %s", res)
	}
	fs, err := l.h.FilterList(env.Link, env.Root)
	if err != nil {
		t.Fatal(err)
	}
	have := 0
	for _, f := range fs {
		fw, ok := f.(*netlink.FwFilter)
		if !ok || fw.Priority != classify.FwPrio || fw.Handle == 0 {
			continue
		}
		have++
		if fw.Mask != shaper.MarkMask {
			t.Errorf("fw filter mark %#x has mask %#x, want %#x", fw.Handle, fw.Mask, shaper.MarkMask)
		}
	}
	if have != 3 {
		t.Errorf("%d fw filters, want 3:\n%s", have, l.ns.Run(t, "tc", "filter", "show", "dev", l.dev))
	}
	l.send(t, 0x80000002, 3, 300)
	l.waitPackets(t, rec, 0x10, 3)
}

// classifierEnv is the classifier environment of the lab's device under
// gtpqos's HTB root.
func (l *lab) classifierEnv(t *testing.T) classify.Env {
	t.Helper()
	link, err := l.h.LinkByName(l.dev)
	if err != nil {
		t.Fatal(err)
	}
	return classify.Env{Handle: l.h, Link: link, Root: rootHandle()}
}
