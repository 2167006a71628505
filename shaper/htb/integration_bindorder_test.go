package htb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
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
			rec := l.rec(Options{Custom: bc, Incremental: incremental, Leaf: plan.LeafFIFO})
			pol := plan.DefaultPolicy(100 * mbit)
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
			l.matches(t, l.rec(Options{}), t2)
			if res := mustReconcile(t, l.rec(Options{Custom: bc, Leaf: plan.LeafFIFO}), t2); !res.InSync() {
				t.Errorf("second run: %s; want in sync", res.Summary())
			}
		})
	}
}

// chunkRecorder records the size of every table synced and cancels the
// run once it has seen cancelAt syncs (0: never).
type chunkRecorder struct {
	bindChecker
	sizes    []int
	deltas   int // syncs made as deltas, without reading the kernel back
	cancelAt int
	cancel   context.CancelFunc
}

func (c *chunkRecorder) Sync(ctx context.Context, env classify.Env, table classify.Table) (classify.Result, error) {
	res, err := c.bindChecker.Sync(ctx, env, table)
	c.record(table)
	return res, err
}

func (c *chunkRecorder) SyncDelta(ctx context.Context, env classify.Env, from, to classify.Table) (classify.Result, error) {
	res, err := c.bindChecker.SyncDelta(ctx, env, from, to)
	c.deltas++
	c.record(to)
	return res, err
}

func (c *chunkRecorder) record(table classify.Table) {
	c.sizes = append(c.sizes, len(table.Entries))
	if len(c.sizes) == c.cancelAt {
		c.cancel()
	}
}

// A build binds its flow classes in chunks as it creates them, not all at
// the end: flows are classified while a long build goes on, and a build
// that dies half-way leaves the chunks it finished bound. Every chunk
// binds only classes that exist.
func TestIntegrationBuildBindsInChunks(t *testing.T) {
	flows := scaleFlows(1, 45)
	pol := scalePolicy()
	t.Run("whole build", func(t *testing.T) {
		l := newLab(t)
		cr := &chunkRecorder{bindChecker: bindChecker{Classifier: classify.NewMarkBPF(), l: l, t: t}}
		rec := l.rec(Options{Custom: cr, Leaf: plan.LeafFIFO})
		rec.bind = bindChunk{Classes: 10, Every: time.Hour}
		mustReconcile(t, rec, mustPlan(t, flows, pol, nil))
		if want := []int{10, 20, 30, 40, 45}; !slices.Equal(cr.sizes, want) {
			t.Errorf("tables synced: %v entries; want %v", cr.sizes, want)
		}
		if len(cr.early) > 0 {
			t.Errorf("bound classes before creating them: %v", cr.early)
		}
		// After the first, a build's syncs trust what it wrote.
		if cr.deltas != len(cr.sizes)-1 {
			t.Errorf("%d of %d syncs were deltas; want all but the first", cr.deltas, len(cr.sizes))
		}
		l.matches(t, l.rec(Options{}), mustPlan(t, flows, pol, nil))
	})
	t.Run("killed after three chunks", func(t *testing.T) {
		l := newLab(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cr := &chunkRecorder{bindChecker: bindChecker{Classifier: classify.NewMarkBPF(), l: l, t: t}, cancelAt: 3, cancel: cancel}
		rec := l.rec(Options{Custom: cr, Leaf: plan.LeafFIFO})
		rec.bind = bindChunk{Classes: 10, Every: time.Hour}
		if _, err := rec.Reconcile(ctx, mustPlan(t, flows, pol, nil)); !errors.Is(err, context.Canceled) {
			t.Fatalf("reconcile: %v; want it cancelled", err)
		}
		b, err := classify.NewMarkBPF().Bindings(context.Background(), l.classifierEnv(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 30 {
			t.Errorf("%d flows bound after the run died; want the three chunks' 30", len(b))
		}
		// The next run completes the tree.
		full := mustPlan(t, flows, pol, nil)
		mustReconcile(t, l.rec(Options{Leaf: plan.LeafFIFO}), full)
		l.matches(t, l.rec(Options{}), full)
	})
}
