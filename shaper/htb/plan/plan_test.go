package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/spec"
)

const mbit = 1_000_000

func seedFlows() []shaper.Flow {
	return []shaper.Flow{
		{ID: shaper.FlowID{SEID: 1, QERID: 1}, Name: "A", QFI: 2, Direction: shaper.Downlink, GBR: 15 * mbit, MBR: 18 * mbit, Mark: 2},
		{ID: shaper.FlowID{SEID: 1, QERID: 2}, Name: "B", QFI: 3, Direction: shaper.Downlink, GBR: 5 * mbit, MBR: 6 * mbit, Mark: 3},
		{ID: shaper.FlowID{SEID: 1, QERID: 3}, Name: "C", QFI: 4, Direction: shaper.Downlink, MBR: 30 * mbit, Mark: 4},
	}
}

// rc is a compact class description for comparisons.
type rc struct {
	Minor, Parent uint16
	Role          shaper.Role
	Rate, Ceil    uint64
	Mark          uint32
}

func compact(t *Tree) []rc {
	out := []rc{}
	for _, c := range t.Classes {
		out = append(out, rc{c.Minor, c.Parent, c.Role, c.Rate, c.Ceil, c.Mark})
	}
	return out
}

func kinds(ps []shaper.Problem) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Severity.String()+" "+p.Kind.String()+" "+p.Name+" "+p.Field)
	}
	return out
}

func TestPlanSeed(t *testing.T) {
	static := DefaultPolicy(30 * mbit)
	static.Mode = shaper.Static
	tests := []struct {
		name  string
		flows []shaper.Flow
		pol   Policy
		want  []rc
		probs []string
	}{{
		name: "aware", flows: seedFlows(), pol: DefaultPolicy(30 * mbit),
		want: []rc{
			{1, 0, shaper.RoleLink, 30 * mbit, 30 * mbit, 0},
			{2, 1, shaper.RoleDefault, 1 * mbit, 30 * mbit, 0},
			{0x10, 1, shaper.RoleFlow, 15 * mbit, 18 * mbit, 2},
			{0x11, 1, shaper.RoleFlow, 5 * mbit, 6 * mbit, 3},
			{0x12, 1, shaper.RoleFlow, 1 * mbit, 30 * mbit, 4},
		},
		probs: []string{},
	}, {
		name: "static", flows: seedFlows(), pol: static,
		want: []rc{
			{1, 0, shaper.RoleLink, 30 * mbit, 30 * mbit, 0},
			{2, 1, shaper.RoleDefault, 1 * mbit, 30 * mbit, 0},
			{0x10, 1, shaper.RoleFlow, 10 * mbit, 30 * mbit, 2},
			{0x11, 1, shaper.RoleFlow, 10 * mbit, 30 * mbit, 3},
			{0x12, 1, shaper.RoleFlow, 10 * mbit, 30 * mbit, 4},
		},
		probs: []string{"warning oversubscribed policy link"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree, probs := Plan(tc.flows, tc.pol, nil)
			if diff := cmp.Diff(tc.want, compact(tree)); diff != "" {
				t.Errorf("classes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.probs, kinds(probs)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			for _, c := range tree.Classes {
				if c.Burst != 32*1024 || c.CBurst != 32*1024 || c.Quantum != 12500 {
					t.Errorf("class %x: burst/cburst/quantum %d/%d/%d, want 32768/32768/12500", c.Minor, c.Burst, c.CBurst, c.Quantum)
				}
			}
		})
	}
}

func TestPlanProblems(t *testing.T) {
	link := uint64(30 * mbit)
	f := func(qer uint32, gbr, mbr uint64, mark uint32) shaper.Flow {
		return shaper.Flow{ID: shaper.FlowID{SEID: 1, QERID: qer}, Name: string(rune('A' + qer - 1)), QFI: 1, GBR: gbr, MBR: mbr, Mark: mark}
	}
	clamp := DefaultPolicy(link)
	clamp.Admission = shaper.Clamp
	smallQ := DefaultPolicy(link)
	smallQ.Quantum = 1000
	zeroLink := DefaultPolicy(0)
	tests := []struct {
		name   string
		flows  []shaper.Flow
		pol    Policy
		probs  []string
		minors []uint16 // flow class minors expected in the tree
	}{
		{"mbr below gbr", []shaper.Flow{f(1, 5*mbit, 4*mbit, 1)}, DefaultPolicy(link),
			[]string{"error mbr-below-gbr flow A (seid=1 qer=1) mbr"}, nil},
		{"gbr above link", []shaper.Flow{f(1, 31*mbit, 0, 1)}, DefaultPolicy(link),
			[]string{"error gbr-above-link flow A (seid=1 qer=1) gbr"}, nil},
		{"sum of gbr refused", []shaper.Flow{f(1, 20*mbit, 0, 1), f(2, 20*mbit, 0, 2)}, DefaultPolicy(link),
			[]string{"error gbr-sum-above-link flow B (seid=1 qer=2) gbr"}, []uint16{0x10}},
		{"sum of gbr clamped", []shaper.Flow{f(1, 20*mbit, 0, 1), f(2, 20*mbit, 0, 2)}, clamp,
			[]string{"warning clamped flow B (seid=1 qer=2) gbr", "warning oversubscribed policy link"}, []uint16{0x10, 0x11}},
		{"clamp keeps the non-GBR minimum", []shaper.Flow{f(1, 29*mbit+500_000, 0, 1), f(2, 5*mbit, 0, 2)}, clamp,
			[]string{"error gbr-sum-above-link flow B (seid=1 qer=2) gbr", "warning oversubscribed policy link"}, []uint16{0x10}},
		{"clamp to exactly the non-GBR minimum", []shaper.Flow{f(1, 29*mbit, 0, 1), f(2, 5*mbit, 0, 2)}, clamp,
			[]string{"warning clamped flow B (seid=1 qer=2) gbr", "warning oversubscribed policy link"}, []uint16{0x10, 0x11}},
		{"duplicate flow", []shaper.Flow{f(1, 0, 0, 1), f(1, 0, 0, 2)}, DefaultPolicy(link),
			[]string{"error duplicate-flow flow A (seid=1 qer=1) id"}, []uint16{0x10}},
		{"duplicate mark", []shaper.Flow{f(1, 0, 0, 7), f(2, 0, 0, 7)}, DefaultPolicy(link),
			[]string{"error duplicate-mark flow B (seid=1 qer=2) mark"}, []uint16{0x10}},
		{"duplicate teid and qfi", []shaper.Flow{
			{ID: shaper.FlowID{SEID: 1, QERID: 1}, Name: "A", QFI: 1, TEID: 0x64, Mark: 1},
			{ID: shaper.FlowID{SEID: 1, QERID: 2}, Name: "B", QFI: 1, TEID: 0x64, Mark: 2},
			{ID: shaper.FlowID{SEID: 1, QERID: 3}, Name: "C", QFI: 2, TEID: 0x64, Mark: 3}, // other QFI: fine
			{ID: shaper.FlowID{SEID: 1, QERID: 4}, Name: "D", QFI: 1, Mark: 4},             // TEID 0: not a key
			{ID: shaper.FlowID{SEID: 1, QERID: 5}, Name: "E", QFI: 1, Mark: 5}},
			DefaultPolicy(link),
			[]string{"error duplicate-teid flow B (seid=1 qer=2) teid"}, []uint16{0x10, 0x11, 0x12, 0x13}},
		{"mark outside the mask", []shaper.Flow{f(1, 0, 0, 0x80000002), f(2, 0, 0, 0x00FFFFFF)}, DefaultPolicy(link),
			[]string{"error bad-mark flow A (seid=1 qer=1) mark"}, []uint16{0x10}},
		{"qfi above 63", []shaper.Flow{{ID: shaper.FlowID{SEID: 1, QERID: 1}, Name: "A", QFI: 64}}, DefaultPolicy(link),
			[]string{"error bad-qfi flow A (seid=1 qer=1) qfi"}, nil},
		{"absurd rate", []shaper.Flow{f(1, 0, shaper.MaxRate+1, 1)}, DefaultPolicy(link),
			[]string{"error bad-rate flow A (seid=1 qer=1) mbr"}, nil},
		{"tiny rate", []shaper.Flow{f(1, 3, 0, 1)}, DefaultPolicy(link),
			[]string{"error bad-rate flow A (seid=1 qer=1) gbr"}, nil},
		{"quantum below frame", []shaper.Flow{f(1, 0, 0, 1)}, smallQ,
			[]string{"warning clamped policy quantum"}, []uint16{0x10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree, probs := Plan(tc.flows, tc.pol, nil)
			if diff := cmp.Diff(tc.probs, kinds(probs)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			got := []uint16(nil)
			for _, c := range tree.FlowClasses() {
				got = append(got, c.Minor)
			}
			if diff := cmp.Diff(tc.minors, got); diff != "" {
				t.Errorf("flow minors (-want +got):\n%s", diff)
			}
		})
	}
	if tree, probs := Plan(nil, zeroLink, nil); tree != nil || len(probs) != 1 || probs[0].Field != "link" {
		t.Errorf("zero link: tree %v, problems %v; want no tree and one link problem", tree, probs)
	}
	badCls := DefaultPolicy(link)
	badCls.Classifier = "fww"
	if tree, probs := Plan(nil, badCls, nil); tree != nil || len(probs) != 1 || probs[0].Field != "classifier" || probs[0].Kind != shaper.BadPolicy {
		t.Errorf("classifier fww: tree %v, problems %v; want no tree and one classifier problem", tree, probs)
	}
	gtpu := DefaultPolicy(link)
	gtpu.Classifier = spec.KindGTPU
	if tree, probs := Plan(nil, gtpu, nil); tree == nil || len(probs) != 0 {
		t.Errorf("classifier gtpu: tree %v, problems %v; want a tree and no problems", tree, probs)
	}
	_, probs := Plan([]shaper.Flow{f(1, 20*mbit, 0, 1), f(2, 20*mbit, 0, 2)}, clamp, nil)
	if !strings.Contains(probs[0].Error(), "clamped to 10mbit") {
		t.Errorf("clamp message %q does not say the clamped rate", probs[0].Error())
	}
	if tree, _ := Plan([]shaper.Flow{f(1, 20*mbit, 0, 1), f(2, 20*mbit, 0, 2)}, clamp, nil); tree.Classes[3].Rate != 10*mbit {
		t.Errorf("clamped flow rate %d, want 10mbit", tree.Classes[3].Rate)
	}
}

func TestPlanDeterministic(t *testing.T) {
	fl := seedFlows()
	a, _ := Plan(fl, DefaultPolicy(30*mbit), nil)
	rev := []shaper.Flow{fl[2], fl[0], fl[1]}
	b, _ := Plan(rev, DefaultPolicy(30*mbit), nil)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("plan depends on input order (-first +reordered):\n%s", diff)
	}
}

func TestPlanStableMinors(t *testing.T) {
	link := uint64(100 * mbit)
	mk := func(qers ...uint32) []shaper.Flow {
		var out []shaper.Flow
		for _, q := range qers {
			out = append(out, shaper.Flow{ID: shaper.FlowID{SEID: 7, QERID: q}, GBR: mbit, Mark: 100 + q})
		}
		return out
	}
	pol := DefaultPolicy(link)
	t1, _ := Plan(mk(1, 2, 3, 4), pol, nil)
	minorOf := func(tr *Tree) map[uint32]uint16 {
		m := map[uint32]uint16{}
		for _, c := range tr.FlowClasses() {
			m[c.Flow.QERID] = c.Minor
		}
		return m
	}
	m1 := minorOf(t1)
	// Remove 1 and 3, add 5 and 0 (0 sorts first): survivors keep minors.
	t2, _ := Plan(mk(0, 2, 4, 5), pol, t1)
	m2 := minorOf(t2)
	for _, q := range []uint32{2, 4} {
		if m1[q] != m2[q] {
			t.Errorf("flow qer=%d moved from minor %x to %x", q, m1[q], m2[q])
		}
	}
	if m2[0] == m2[5] || m2[0] == m2[2] || m2[5] == m2[4] {
		t.Errorf("minors collide: %v", m2)
	}
	// A kernel tree knows marks only: matching by mark keeps minors too.
	kernel := *t2
	kernel.Classes = append([]Class(nil), t2.Classes...)
	for i := range kernel.Classes {
		kernel.Classes[i].Flow, kernel.Classes[i].Name = shaper.FlowID{}, ""
	}
	t3, _ := Plan(mk(0, 2, 4, 5), pol, &kernel)
	if diff := cmp.Diff(m2, minorOf(t3)); diff != "" {
		t.Errorf("minors changed when planning against the kernel tree (-before +after):\n%s", diff)
	}
}

func TestPlanSessionAMBR(t *testing.T) {
	fl := []shaper.Flow{
		{ID: shaper.FlowID{SEID: 5, QERID: 1}, Name: "gbr", GBR: 4 * mbit, MBR: 8 * mbit, SessionAMBR: 10 * mbit, Mark: 1},
		{ID: shaper.FlowID{SEID: 5, QERID: 2}, Name: "ngbr1", SessionAMBR: 10 * mbit, Mark: 2},
		{ID: shaper.FlowID{SEID: 5, QERID: 3}, Name: "ngbr2", MBR: 20 * mbit, SessionAMBR: 10 * mbit, Mark: 3},
		{ID: shaper.FlowID{SEID: 6, QERID: 1}, Name: "other", Mark: 4},
	}
	tree, probs := Plan(fl, DefaultPolicy(100*mbit), nil)
	if len(probs) != 0 {
		t.Fatalf("problems: %v", probs)
	}
	got := compact(tree)
	want := []rc{
		{1, 0, shaper.RoleLink, 100 * mbit, 100 * mbit, 0},
		{2, 1, shaper.RoleDefault, 1 * mbit, 100 * mbit, 0},
		{0x10, 1, shaper.RoleSession, 2 * mbit, 10 * mbit, 0}, // sessions get minors first
		{0x11, 1, shaper.RoleFlow, 4 * mbit, 8 * mbit, 1},     // GBR flow: outside the AMBR
		{0x12, 0x10, shaper.RoleFlow, 1 * mbit, 10 * mbit, 2}, // non-GBR: under the AMBR
		{0x13, 0x10, shaper.RoleFlow, 1 * mbit, 10 * mbit, 3}, // MBR 20 capped at the AMBR
		{0x14, 1, shaper.RoleFlow, 1 * mbit, 100 * mbit, 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
	// Planned again against itself, nothing moves.
	pol := DefaultPolicy(100 * mbit)
	again, _ := Plan(fl, pol, tree)
	if diff := cmp.Diff(tree, again); diff != "" {
		t.Errorf("replan moved classes (-first +second):\n%s", diff)
	}
}

func TestPlanTooManyFlows(t *testing.T) {
	n := MaxClasses + 2
	fl := make([]shaper.Flow, n)
	for i := range fl {
		fl[i] = shaper.Flow{ID: shaper.FlowID{SEID: 1, QERID: uint32(i + 1)}}
	}
	pol := DefaultPolicy(1_000_000 * mbit)
	pol.NonGBRMin = 1000
	pol.DefaultRate = 1000
	tree, probs := Plan(fl, pol, nil)
	if got := len(tree.FlowClasses()); got != MaxClasses {
		t.Errorf("%d flow classes, want %d", got, MaxClasses)
	}
	var tooMany int
	for _, p := range probs {
		if p.Kind == shaper.TooManyFlows {
			tooMany++
		}
	}
	if tooMany != 2 {
		t.Errorf("%d too-many-flows problems, want 2", tooMany)
	}
	for _, c := range tree.Classes {
		if c.Minor == OwnedMajor || c.Minor == 0xffff {
			t.Errorf("class uses reserved minor %x", c.Minor)
		}
	}
}

func TestTCCommandsSeed(t *testing.T) {
	tree, _ := Plan(seedFlows(), DefaultPolicy(30*mbit), nil)
	out := tree.TCCommands("eth1")
	for _, want := range []string{
		"tc qdisc replace dev eth1 root handle 6771: stab overhead -58 linklayer ethernet htb default 2",
		"classid 6771:1 htb rate 30mbit ceil 30mbit overhead 58 burst 32k cburst 32k quantum 12500",
		"classid 6771:2 htb rate 1mbit ceil 30mbit burst 32k cburst 32k quantum 12500",
		"parent 6771:1 classid 6771:10 htb rate 15mbit ceil 18mbit burst 32k cburst 32k quantum 12500",
		"parent 6771:1 classid 6771:11 htb rate 5mbit ceil 6mbit burst 32k cburst 32k quantum 12500",
		"parent 6771:1 classid 6771:12 htb rate 1mbit ceil 30mbit burst 32k cburst 32k quantum 12500",
		"handle 0x2/0xffffff fw flowid 6771:10", "handle 0x3/0xffffff fw flowid 6771:11", "handle 0x4/0xffffff fw flowid 6771:12",
		"fq_codel limit 1000 target 5ms interval 100ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tc commands lack %q:\n%s", want, out)
		}
	}
	// Frame accounting is the tree without a size table or overheads; a
	// fixed overhead is used as given.
	for _, c := range []struct {
		acc       shaper.Accounting
		over      shaper.Overhead
		root, lnk string
	}{
		{shaper.AccountFrame, shaper.Overhead{}, "root handle 6771: htb default 2", "classid 6771:1 htb rate 30mbit ceil 30mbit burst"},
		{shaper.AccountPacket, shaper.Overhead{Fixed: true, Bytes: 14}, "root handle 6771: stab overhead -14 linklayer ethernet htb default 2",
			"classid 6771:1 htb rate 30mbit ceil 30mbit overhead 14 burst"},
		{shaper.AccountPacket, shaper.Overhead{Fixed: true}, "root handle 6771: stab overhead 0 linklayer ethernet htb", "classid 6771:1 htb rate 30mbit ceil 30mbit burst"},
	} {
		pol := DefaultPolicy(30 * mbit)
		pol.Accounting, pol.Overhead = c.acc, c.over
		tree, _ := Plan(seedFlows(), pol, nil)
		out := tree.TCCommands("eth1")
		if !strings.Contains(out, c.root) || !strings.Contains(out, c.lnk) || strings.Count(out, "overhead") > 2 {
			t.Errorf("accounting %s overhead %s: want %q and %q, overhead on the root and link class only:\n%s", c.acc, c.over, c.root, c.lnk, out)
		}
	}
}

// TestPlanShrinksThePool: spares beyond a smaller pool leave the tree,
// the lowest kept; the flows keep their classes.
func TestPlanShrinksThePool(t *testing.T) {
	pol := DefaultPolicy(100e6)
	pol.Pool = 4
	flows := []shaper.Flow{{ID: shaper.FlowID{SEID: 1, QERID: 1}, QFI: 1, Direction: shaper.Downlink, GBR: 1e6, MBR: 2e6, Mark: 2}}
	prev, probs := Plan(flows, pol, nil)
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	// The pool's four spares, as the backend grows them.
	for m := uint16(0x30); m < 0x34; m++ {
		prev.Classes = append(prev.Classes, SpareClass(prev.FlowClasses()[0], m))
	}
	spares := func(tr *Tree) (out []uint16) {
		for _, c := range tr.Classes {
			if c.Role == shaper.RoleSpare {
				out = append(out, c.Minor)
			}
		}
		return out
	}
	had := spares(prev)
	if len(had) != 4 {
		t.Fatalf("pool 4 planned spares %v", had)
	}
	for _, pool := range []int{4, 2, 0} {
		pol.Pool = pool
		next, _ := Plan(flows, pol, prev)
		if got := spares(next); !slices.Equal(got, had[:pool]) {
			t.Errorf("pool %d after 4 spares: spares %v, want %v", pool, got, had[:pool])
		}
		if len(next.Classes) != len(prev.Classes)-(4-pool) {
			t.Errorf("pool %d: %d classes, want %d", pool, len(next.Classes), len(prev.Classes)-(4-pool))
		}
	}
}

// TestPlanOversubscribedNamesParts checks that a plan whose classes ask for
// more than the link warns with the parts: the seed's flows on 21 Mbit/s
// (GBRs 20, C's non-GBR minimum 1, the default class 1).
func TestPlanOversubscribedNamesParts(t *testing.T) {
	_, probs := Plan(seedFlows(), DefaultPolicy(21*mbit), nil)
	var detail string
	for _, p := range probs {
		if p.Kind == shaper.Oversubscribed {
			detail = p.Detail
		}
	}
	want := "class rates add up to " + shaper.FormatRate(22*mbit) + " (GBRs " + shaper.FormatRate(20*mbit) + " + non-GBR minimums " +
		shaper.FormatRate(1*mbit) + " + default class " + shaper.FormatRate(1*mbit) + ") on a " + shaper.FormatRate(21*mbit) + " link"
	if !strings.HasPrefix(detail, want) {
		t.Errorf("oversubscribed warning %q, want it to start %q", detail, want)
	}
}
