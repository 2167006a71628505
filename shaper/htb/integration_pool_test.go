package htb

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// TestIntegrationPool checks the pool of spare classes on a real device:
// the background build fills it (reporting progress), a new flow changes a
// spare instead of creating a class, a removed flow's class is parked while
// the pool has room, the pool refills once half of it is taken, a removed
// flow's class goes when the pool is full, and a restarted backend adopts
// the spares without a write.
func TestIntegrationPool(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	var mu sync.Mutex
	var progress [][2]int
	be := l.open(Options{Incremental: true, OnPool: func(_ string, ready, want int) {
		mu.Lock()
		progress = append(progress, [2]int{ready, want})
		mu.Unlock()
	}})
	defer be.Close()
	pol := plan.DefaultPolicy(100 * mbit)
	pol.Pool = 20
	flows := []shaper.Flow{updateFlow(1, 1, 1, 0), updateFlow(2, 1, 1, 0)}
	if _, err := be.Apply(ctx, flows, pol.Shaper(), shaper.ApplyOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	spares := func() int {
		in, err := l.open(Options{}).Inspect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range in.Classes {
			if c.Role == shaper.RoleSpare {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("a full pool", func() bool { return spares() == 20 })
	mu.Lock()
	last := progress[len(progress)-1]
	mu.Unlock()
	if last != [2]int{20, 20} || len(progress) < 2 {
		t.Errorf("progress reports %v, want a few ending with 20 of 20", progress)
	}

	rep, err := be.Update(ctx, map[uint64][]shaper.Flow{3: {updateFlow(3, 1, 1, 0)}}, pol.Shaper())
	if err != nil || len(rep.Changes) == 0 {
		t.Fatalf("add a flow: %v, %+v", err, rep)
	}
	// A FIFO leaf is resized to the flow's ceil × budget: one write more
	// (a spare's fq_codel serves any flow as it is).
	wantWrites := 3
	if strings.Contains(rep.Summary, "leaf fq_codel") {
		wantWrites = 2
	}
	if n := countOps(rep, "add", "class"); n != 0 || countOps(rep, "change", "class") != 1 || rep.Writes != wantWrites {
		t.Errorf("add a flow with a warm pool: %s; want a spare changed (and its leaf resized) and bound (%d writes), no class created", rep.Summary, wantWrites)
	}
	// Adds and removes that balance leave the pool alone: the removed
	// flow's class is parked again.
	time.Sleep(100 * time.Millisecond)
	if n := spares(); n != 19 {
		t.Errorf("%d spares after one add, want 19 (no refill above half the pool)", n)
	}
	rep, err = be.Update(ctx, map[uint64][]shaper.Flow{3: nil}, pol.Shaper())
	if err != nil || countOps(rep, "change", "class") != 1 || countOps(rep, "delete", "class") != 0 {
		t.Errorf("remove a flow with room in the pool: %v, %s; want its class parked", err, rep.Summary)
	}
	// Half the pool taken: the grower fills it again.
	added := map[uint64][]shaper.Flow{}
	for seid := uint64(10); seid < 20; seid++ {
		added[seid] = []shaper.Flow{updateFlow(seid, 1, 1, 0)}
	}
	if _, err := be.Update(ctx, added, pol.Shaper()); err != nil {
		t.Fatalf("add 10 flows: %v", err)
	}
	waitFor("the pool refilled", func() bool { return spares() == 20 })

	// The pool is full again: a removed flow's class goes (the pool stays
	// at its size).
	rep, err = be.Update(ctx, map[uint64][]shaper.Flow{10: nil}, pol.Shaper())
	if err != nil || countOps(rep, "delete", "class") != 1 || countOps(rep, "change", "class") != 0 {
		t.Errorf("remove a flow with a full pool: %v, %s; want its class deleted", err, rep.Summary)
	}
	flows = append(flows, added[11][0], added[12][0], added[13][0], added[14][0], added[15][0],
		added[16][0], added[17][0], added[18][0], added[19][0])
	be.Close()

	fresh := l.open(Options{})
	rep, err = fresh.Apply(ctx, flows, pol.Shaper(), shaper.ApplyOptions{Strict: true})
	if err != nil || !rep.InSync() {
		t.Fatalf("a restarted backend: %v, %s; want the tree and its spares adopted, in sync", err, rep.Summary)
	}
}

// countOps counts a report's changes with this op on this object.
func countOps(rep shaper.Report, op, object string) int {
	n := 0
	for _, c := range rep.Changes {
		if c.Op == op && c.Object == object {
			n++
		}
	}
	return n
}
