package htb

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// canonical is everything gtpqos owns on the lab's device as the kernel
// holds it: tc's qdiscs (without counters), classes and filters, and the
// classifier's bindings (a BPF map's entries are not in tc's output).
func (l *lab) canonical(t testing.TB) string {
	t.Helper()
	tr, err := l.rec(Options{}).Actual(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b []string
	if tr != nil {
		for _, c := range tr.FlowClasses() {
			b = append(b, fmt.Sprintf("mark %#x -> %s", c.Mark, tr.Handle(c.Minor)))
		}
	}
	sort.Strings(b)
	// Filters of the inner classes too (tc lists the root's alone).
	inner := ""
	for _, c := range l.tcClasses(t) {
		f := strings.Fields(c)
		if f[1] != "root" && !strings.Contains(inner, " "+f[1]+":") {
			inner += " " + f[1] + ":\n" + l.ns.Run(t, "tc", "filter", "show", "dev", l.dev, "parent", f[1])
		}
	}
	// A re-loaded BPF program has another id and load time.
	d := bpfID.ReplaceAllString(l.dump(t)+inner, "id N")
	return d + "bindings (" + string(classifierOrNone(tr)) + "):\n" + strings.Join(b, "\n")
}

var bpfID = regexp.MustCompile(`\bid \d+`)

func classifierOrNone(t *plan.Tree) classify.Kind {
	if t == nil || t.Classifier == "" {
		return "none"
	}
	return t.Classifier
}

// rebind makes the installed classifier hold table's entries, changed by
// edit (drift injected through the classifier itself, fw or bpf alike).
func (l *lab) rebind(t *testing.T, edit func(*classify.Table)) {
	t.Helper()
	rec := l.rec(Options{})
	tr, err := rec.Actual(context.Background())
	if err != nil || tr == nil {
		t.Fatalf("read tree: %v", err)
	}
	table := tr.Table()
	edit(&table)
	if _, err := rec.builtin(tr.Classifier).Sync(context.Background(), l.classifierEnv(t), table); err != nil {
		t.Fatalf("inject classifier drift: %v", err)
	}
}

// Drift of every kind gtpqos owns, made behind its back: `gtpqos verify`
// (Inspect + shaper.Verify) reports what it can see, and one full Apply
// (a new process, as `gtpqos apply` or the watch's resync) brings the
// device back to exactly the tree a clean run makes; the next Apply
// writes nothing. The clean tree holds a full pool of spare classes (two
// flows' classes parked when they left): every repair keeps them as they
// are, none is taken for a foreign class or rebound to a flow, and a
// spare changed by hand is parked again.
func TestIntegrationDriftEveryKind(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	pol := plan.DefaultPolicy(30 * mbit)
	pol.Pool = 2
	applyFlows := func(t *testing.T, flows []shaper.Flow) shaper.Report {
		t.Helper()
		rep, err := l.open(Options{}).Apply(ctx, flows, pol.Shaper(), shaper.ApplyOptions{Strict: true})
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		return rep
	}
	apply := func(t *testing.T) shaper.Report { return applyFlows(t, seedFlows()) }
	build := func(t *testing.T) {
		l.ns.Try("tc", "qdisc", "del", "dev", l.dev, "root")
		leaving := []shaper.Flow{
			{ID: shaper.FlowID{SEID: 2, QERID: 1}, Name: "D", QFI: 5, Direction: shaper.Downlink, MBR: 2 * mbit, Mark: 5},
			{ID: shaper.FlowID{SEID: 3, QERID: 1}, Name: "E", QFI: 6, Direction: shaper.Downlink, MBR: 3 * mbit, Mark: 6},
		}
		applyFlows(t, append(seedFlows(), leaving...))
		apply(t)
	}
	build(t)
	clean := l.canonical(t)
	spare := ""
	if tr, err := l.rec(Options{}).Actual(ctx); err == nil && tr != nil {
		for _, c := range tr.Classes {
			if c.Role == shaper.RoleSpare {
				spare = tr.Handle(c.Minor)
			}
		}
	}
	if n := strings.Count(clean, "rate 8Kbit ceil 8Kbit"); n != pol.Pool || spare == "" {
		t.Fatalf("clean tree has %d spare classes (last %q), want the pool's %d:\n%s", n, spare, pol.Pool, clean)
	}
	fqCodel := strings.Contains(clean, "fq_codel")
	tc := func(args ...string) func(*testing.T) {
		return func(t *testing.T) {
			l.ns.Run(t, "tc", append(args[:1:1], append([]string{args[1], "dev", l.dev}, args[2:]...)...)...)
		}
	}
	leafDrift := tc("qdisc", "replace", "parent", "6771:10", "handle", "10:", "bfifo", "limit", "5000")
	if fqCodel {
		leafDrift = func(t *testing.T) {
			l.ns.Run(t, "tc", "qdisc", "del", "dev", l.dev, "parent", "6771:10")
			l.ns.Run(t, "tc", "qdisc", "add", "dev", l.dev, "parent", "6771:10", "handle", "10:", "fq_codel",
				"limit", "50", "target", "20ms", "flows", "64", "noecn", "quantum", "300")
		}
	}
	dirty := false
	for _, c := range []struct {
		name   string
		inject func(*testing.T)
		verify string // what verify must report ("" if it cannot see it)
	}{
		{name: "class rate changed", inject: tc("class", "change", "parent", "6771:1", "classid", "6771:11", "htb", "rate", "2mbit", "ceil", "3mbit")},
		{name: "default class deleted", inject: tc("class", "del", "classid", "6771:2")},
		{name: "foreign class under the root", inject: tc("class", "add", "parent", "6771:1", "classid", "6771:99", "htb", "rate", "1mbit")},
		{name: "spare class rate changed", inject: tc("class", "change", "parent", "6771:1", "classid", spare, "htb", "rate", "1mbit", "ceil", "2mbit")},
		{name: "foreign filter on the root", inject: tc("filter", "add", "parent", "6771:", "prio", "5", "protocol", "all", "u32", "match", "u32", "0", "0", "flowid", "6771:11"),
			verify: "foreign u32 filter at prio 5 under 6771:0"},
		{name: "foreign filter on the link class", inject: tc("filter", "add", "parent", "6771:1", "prio", "3", "protocol", "ip", "u32", "match", "u32", "0", "0", "flowid", "6771:12"),
			verify: "foreign u32 filter at prio 3 under 6771:1"},
		{name: "foreign leaf qdisc kind", inject: tc("qdisc", "replace", "parent", "6771:11", "handle", "99:", "bfifo", "limit", "5000")},
		{name: "leaf qdisc of the right kind, other parameters", inject: leafDrift},
		{name: "classifier entry removed", inject: func(t *testing.T) {
			l.rebind(t, func(tb *classify.Table) { tb.Entries = tb.Entries[1:] })
		}, verify: "no bpf classifier entry points at it|no fw classifier entry points at it"},
		{name: "classifier entry on the wrong class", inject: func(t *testing.T) {
			l.rebind(t, func(tb *classify.Table) {
				tb.Entries[0].ClassID, tb.Entries[1].ClassID = tb.Entries[1].ClassID, tb.Entries[0].ClassID
			})
		}},
		{name: "classifier entry moved onto a spare class", inject: func(t *testing.T) {
			l.rebind(t, func(tb *classify.Table) { tb.Entries[0].ClassID = classIDOf(t, spare) })
		}},
		{name: "classifier removed", inject: func(t *testing.T) {
			tr, _ := l.rec(Options{}).Actual(ctx)
			if err := l.rec(Options{}).builtin(tr.Classifier).Remove(ctx, l.classifierEnv(t)); err != nil {
				t.Fatal(err)
			}
		}, verify: "no classifier is installed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if dirty { // a previous case failed: start from a clean tree
				build(t)
			}
			dirty = true
			c.inject(t)
			if l.canonical(t) == clean {
				t.Fatalf("drift %q changed nothing", c.name)
			}
			if c.verify != "" {
				be := l.open(Options{})
				in, err := be.Inspect(ctx)
				if err != nil {
					t.Fatal(err)
				}
				problems, _ := shaper.Verify(in, in, time.Second)
				found := false
				for _, p := range problems {
					for _, w := range strings.Split(c.verify, "|") {
						found = found || strings.Contains(p, w)
					}
				}
				if !found {
					t.Errorf("verify: %q; want a problem naming %q", problems, c.verify)
				}
			}
			rep := apply(t)
			t.Logf("repair: %s %v", rep.Summary, rep.Notes)
			if got := l.canonical(t); got != clean {
				t.Errorf("after the repair:\n%s\nclean run:\n%s", got, clean)
			}
			if rep := apply(t); !rep.InSync() {
				t.Errorf("apply after the repair: %s; want in sync", rep.Summary)
			}
			dirty = t.Failed()
		})
	}
}

// classIDOf parses a class handle ("6771:1a").
func classIDOf(t *testing.T, handle string) uint32 {
	t.Helper()
	var major, minor uint32
	if _, err := fmt.Sscanf(handle, "%x:%x", &major, &minor); err != nil {
		t.Fatalf("class handle %q: %v", handle, err)
	}
	return major<<16 | minor
}
