package plan

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/spec"
)

// canon describes a tree without its class ids: each flow's class (parent
// kind, rates, key, admitted GBR) and each session class, sorted.
func canon(t *Tree) string {
	var lines []string
	for _, c := range t.Classes {
		parent := "root"
		if p, ok := t.Find(c.Parent); ok {
			parent = p.Role.String()
			if p.Role == shaper.RoleSession {
				parent += fmt.Sprintf("(%d)", p.SEID)
			}
		}
		id := c.Role.String()
		switch c.Role {
		case shaper.RoleSpare:
			continue // spares are the pool's, not the plan's decisions
		case shaper.RoleFlow:
			id = fmt.Sprintf("flow %s key=%v gbr=%d", c.Flow, c.Key(), c.GBR)
		case shaper.RoleSession:
			id = fmt.Sprintf("session %d", c.SEID)
		}
		lines = append(lines, fmt.Sprintf("%s under %s rate=%d ceil=%d", id, parent, c.Rate, c.Ceil))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// problemSet describes problems without their order or wording.
func problemSet(ps []shaper.Problem) string {
	var lines []string
	for _, p := range ps {
		lines = append(lines, fmt.Sprintf("%s %s %s %s", p.Flow, p.Kind, p.Severity, p.Field))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// checkReportedProblems returns the problems an update reports, checking
// that a list reported as the same one is what a fresh listing gives and
// that only flows with problems are kept.
func checkReportedProblems(t *testing.T, ctx string, st *State) ([]shaper.Problem, bool) {
	t.Helper()
	list, same := st.AllProblems()
	st.reported.made = false
	fresh, _ := st.AllProblems()
	if same && !slices.Equal(list, fresh) {
		t.Fatalf("%s: problems reported unchanged, but listing them again gives\n%v\nnot\n%v", ctx, fresh, list)
	}
	for id, ps := range st.problems.byFlow {
		if len(ps) == 0 {
			t.Fatalf("%s: flow %s kept with no problems", ctx, id)
		}
	}
	return fresh, same
}

// randomSession makes 0..4 flows for a session, with GBRs, MBRs, marks,
// TEIDs and AMBRs drawn so that admission, duplicate keys and session
// classes all come into play.
func randomSession(r *rand.Rand, seid uint64) []shaper.Flow {
	n := r.IntN(5)
	var ambr uint64
	if r.IntN(2) == 0 {
		ambr = uint64(1+r.IntN(20)) * mbit
	}
	var out []shaper.Flow
	for q := 1; q <= n; q++ {
		f := shaper.Flow{ID: shaper.FlowID{SEID: seid, QERID: uint32(r.IntN(6) + 1)}, QFI: uint8(1 + r.IntN(9)), Direction: shaper.Downlink}
		if r.IntN(3) == 0 {
			f.GBR = uint64(1+r.IntN(25)) * mbit
		}
		f.MBR = f.GBR + uint64(r.IntN(30))*mbit
		f.Mark = uint32(r.IntN(41)) // 0: unreachable through fw
		f.TEID = uint32(100 + r.IntN(20))
		f.SessionAMBR = ambr
		if r.IntN(8) == 0 {
			f.SessionAMBR = uint64(1+r.IntN(20)) * mbit // conflicting AMBR
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b shaper.Flow) int { return shaper.CompareFlowID(a.ID, b.ID) })
	return out
}

func flatten(in map[uint64][]shaper.Flow) []shaper.Flow {
	var out []shaper.Flow
	for _, seid := range slices.Sorted(maps.Keys(in)) {
		out = append(out, in[seid]...)
	}
	return out
}

// kernelModel is what a device holds as the delta describes it: classes
// by minor and classifier entries by class id.
type kernelModel struct {
	classes map[uint16]Class
	entries map[uint32]spec.Entry
}

func modelOf(t *Tree) *kernelModel {
	k := &kernelModel{classes: map[uint16]Class{}, entries: map[uint32]spec.Entry{}}
	for _, c := range t.Classes {
		k.classes[c.Minor] = kernelHeld(c)
	}
	for _, e := range t.Table().Entries {
		if e.Mark != 0 || e.TEID != 0 || e.QFI != 0 {
			k.entries[e.ClassID] = e
		}
	}
	return k
}

// kernelHeld keeps what the kernel holds of a class (not the flow it is
// planned for).
func kernelHeld(c Class) Class {
	return Class{Minor: c.Minor, Parent: c.Parent, Rate: c.Rate, Ceil: c.Ceil, Burst: c.Burst, CBurst: c.CBurst, Quantum: c.Quantum, Prio: c.Prio}
}

// write applies a delta in its order and fails the test if a step would
// point a packet at a missing class or delete a class still in use.
func (k *kernelModel) write(t *testing.T, d *Delta) {
	t.Helper()
	for _, e := range d.Unbind {
		if _, ok := k.entries[e.ClassID]; !ok {
			t.Fatalf("unbind of an entry the device does not hold: %+v", e)
		}
		delete(k.entries, e.ClassID)
	}
	for _, m := range d.Del {
		if _, ok := k.entries[uint32(OwnedMajor)<<16|uint32(m)]; ok {
			t.Fatalf("delete of class %x while an entry points at it", m)
		}
		for _, c := range k.classes {
			if c.Parent == m {
				t.Fatalf("delete of class %x before its child %x", m, c.Minor)
			}
		}
		delete(k.classes, m)
	}
	for _, c := range d.Create {
		if _, ok := k.classes[c.Minor]; ok {
			t.Fatalf("create of class %x that exists", c.Minor)
		}
		if _, ok := k.classes[c.Parent]; !ok {
			t.Fatalf("create of class %x before its parent %x", c.Minor, c.Parent)
		}
		k.classes[c.Minor] = kernelHeld(c)
	}
	for _, c := range d.Change {
		if _, ok := k.classes[c.Minor]; !ok {
			t.Fatalf("change of class %x that does not exist", c.Minor)
		}
		k.classes[c.Minor] = kernelHeld(c)
	}
	for _, e := range d.Bind {
		if _, ok := k.classes[uint16(e.ClassID)]; !ok {
			t.Fatalf("bind of %+v to a class that does not exist", e)
		}
		k.entries[e.ClassID] = e
	}
}

// TestIncrementalMatchesFullPlan runs random sequences of session changes
// through the incremental planner and checks after every step that it
// made the decisions Plan makes for the same flows against the same
// previous tree (class ids aside) and reports the same problems, fw's
// unreachable-flow warnings included, that its delta turns the previous tree
// into the new one without ever pointing a packet at a missing class, and
// that an unchanged session costs no write.
func TestIncrementalMatchesFullPlan(t *testing.T) {
	var unchanged int // updates that reported their problems unchanged
	defer func() {
		if !t.Failed() && unchanged == 0 {
			t.Error("no update reported its problems unchanged: the cached list was never checked")
		}
	}()
	// -short: 14 seeds still cover every policy variant below (clamp,
	// static, no pool, a small pool) on a few inputs each.
	seeds := uint64(40)
	if testing.Short() {
		seeds = 14
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		pol := DefaultPolicy(60 * mbit)
		if seed%3 == 0 {
			pol.Admission = shaper.Clamp
		}
		if seed%7 == 0 {
			pol.Mode = shaper.Static
		}
		if seed%5 == 0 {
			pol.Pool = 0
		} else if seed%2 == 0 {
			pol.Pool = 2 // a small pool fills and overflows
		}
		input := map[uint64][]shaper.Flow{}
		for s := uint64(1); s <= 6; s++ {
			if fl := randomSession(r, s); len(fl) > 0 {
				input[s] = fl
			}
		}
		tree, problems := Plan(flatten(input), pol, nil)
		st, err := NewState(tree, input, pol, append(problems, markCheck().Problems(tree)...))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		st.Keys = markCheck()
		for step := 0; step < 60; step++ {
			prev := st.Desired()
			changes := map[uint64][]shaper.Flow{}
			for n := 1 + r.IntN(3); n > 0; n-- {
				seid := uint64(1 + r.IntN(8))
				changes[seid] = randomSession(r, seid)
			}
			for seid, fl := range changes {
				if len(fl) == 0 {
					delete(input, seid)
				} else {
					input[seid] = fl
				}
			}
			d := st.Apply(changes)
			got := st.Desired()
			want, wantProblems := Plan(flatten(input), pol, prev)
			wantProblems = append(wantProblems, markCheck().Problems(want)...)
			ctx := fmt.Sprintf("seed %d step %d", seed, step)
			if canon(got) != canon(want) {
				t.Fatalf("%s: incremental tree differs from a full plan:\n--- incremental\n%s\n--- full\n%s", ctx, canon(got), canon(want))
			}
			// The kept plan's tree carries the header a full plan makes: a
			// periodic resync reconciles the device to it.
			if gh, wh := *header(got), *header(want); !reflect.DeepEqual(gh, wh) {
				t.Fatalf("%s: the kept plan's tree header %+v, a full plan's %+v", ctx, gh, wh)
			}
			reported, same := checkReportedProblems(t, ctx, st)
			if same {
				unchanged++
			}
			if a, b := problemSet(reported), problemSet(wantProblems); a != b {
				t.Fatalf("%s: problems differ:\n--- incremental\n%s\n--- full\n%s", ctx, a, b)
			}
			// A full plan of the same flows against the new tree (a
			// periodic resync) keeps it as it is.
			if again, _ := Plan(flatten(input), pol, got); fmt.Sprint(modelOf(again)) != fmt.Sprint(modelOf(got)) {
				t.Fatalf("%s: a full plan against the incremental tree changes it:\n--- incremental\n%v\n--- full\n%v", ctx, modelOf(got), modelOf(again))
			}
			k := modelOf(prev)
			k.write(t, d)
			if w := modelOf(got); fmt.Sprint(w) != fmt.Sprint(k) {
				t.Fatalf("%s: the delta %+v does not turn the previous tree into the new one:\n--- delta applied\n%v\n--- new\n%v", ctx, d, k, w)
			}
		}
		// The same sessions again: nothing to write.
		again := map[uint64][]shaper.Flow{}
		for seid, fl := range input {
			again[seid] = fl
		}
		if d := st.Apply(again); !d.Empty() {
			t.Fatalf("seed %d: unchanged sessions wrote %+v", seed, d)
		}
	}
}
