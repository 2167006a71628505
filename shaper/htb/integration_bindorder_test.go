package htb

import (
	"context"
	"fmt"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
)

// bindChecker wraps a classifier and, at every Sync, reads the kernel's
// class list and records each entry of the table bound to a class that
// does not exist yet (its packets would fall to the default class until
// the class is created).
type bindChecker struct {
	classify.Classifier
	l     *lab
	t     testing.TB
	early []string
}

func (b *bindChecker) check(table classify.Table) {
	have := map[uint32]bool{}
	for _, c := range b.l.tcClasses(b.t) {
		var maj, min uint32
		if _, err := fmt.Sscanf(c, "%x:%x", &maj, &min); err == nil {
			have[maj<<16|min] = true
		}
	}
	for _, e := range table.Entries {
		if !have[e.ClassID] {
			b.early = append(b.early, fmt.Sprintf("mark %#x bound to %s before the class existed", e.Mark, classify.Handle(e.ClassID)))
		}
	}
}

func (b *bindChecker) Sync(ctx context.Context, env classify.Env, table classify.Table) (classify.Result, error) {
	b.check(table)
	return b.Classifier.Sync(ctx, env, table)
}

func (b *bindChecker) SyncDelta(ctx context.Context, env classify.Env, from, to classify.Table) (classify.Result, error) {
	b.check(to)
	return b.Classifier.(classify.DeltaSyncer).SyncDelta(ctx, env, from, to)
}

// During an update that re-creates classes (a session's class id becomes
// a flow's) and adds new ones, the classifier used to be synced, before
// the re-created classes were deleted, with a table that already bound the
// new flows to classes not yet created. Every Sync must bind only classes
// that exist; the tree still converges in one run.
func TestIntegrationBindsOnlyExistingClasses(t *testing.T) {
	for _, incremental := range []bool{false, true} {
		t.Run(fmt.Sprintf("incremental=%v", incremental), func(t *testing.T) {
			l := newLab(t)
			bc := &bindChecker{Classifier: classify.NewMarkBPF(), l: l, t: t}
			rec := l.rec(WithClassifier(bc), WithIncremental(incremental), WithLeaf(shaper.LeafFIFO))
			pol := shaper.DefaultPolicy(100 * mbit)
			sess := []shaper.Flow{
				{ID: shaper.FlowID{SEID: 3, QERID: 1}, Mark: 0x21, SessionAMBR: 5 * mbit},
				{ID: shaper.FlowID{SEID: 3, QERID: 2}, Mark: 0x22, SessionAMBR: 5 * mbit},
			}
			mustReconcile(t, rec, mustPlan(t, sess, pol, nil)) // session 10, flows 11 and 12
			var flat []shaper.Flow
			for i := uint32(1); i <= 4; i++ {
				flat = append(flat, shaper.Flow{ID: shaper.FlowID{SEID: 4, QERID: i}, Mark: 0x30 + i})
			}
			// Without the previous tree, flows take 10..13: 10 to 12 must be
			// re-created (10 has children), 13 is new.
			t2 := mustPlan(t, flat, pol, nil)
			bc.early = nil
			res := mustReconcile(t, rec, t2)
			if len(bc.early) > 0 {
				t.Errorf("update %s bound classes before creating them: %v", res.Summary(), bc.early)
			}
			l.matches(t, l.rec(), t2)
			if res := mustReconcile(t, l.rec(WithClassifier(bc), WithLeaf(shaper.LeafFIFO)), t2); !res.InSync() {
				t.Errorf("second run: %s; want in sync", res.Summary())
			}
		})
	}
}
