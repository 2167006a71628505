package htb

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// updateFlow is flow qer of session seid with a GBR of gbr Mbit/s (0:
// non-GBR) and an optional session AMBR.
func updateFlow(seid uint64, qer uint32, gbr, ambr uint64) shaper.Flow {
	return shaper.Flow{ID: shaper.FlowID{SEID: seid, QERID: qer}, QFI: uint8(qer), Direction: shaper.Downlink,
		GBR: gbr * mbit, MBR: (gbr + 5) * mbit, SessionAMBR: ambr * mbit, Mark: uint32(seid<<8 | uint64(qer))}
}

// openWithoutPool opens an incremental Backend on the lab's device and
// returns it with a 100 Mbit/s policy that keeps no pool of spares, so
// nothing is written in the background while a second backend reads the
// device.
func (l *lab) openWithoutPool() (*Backend, plan.Policy) {
	pol := plan.DefaultPolicy(100 * mbit)
	pol.Pool = 0
	return l.open(Options{Incremental: true}), pol
}

// TestIntegrationBackendUpdate checks Backend.Update on a real device:
// each step changes one session and writes only that session's classes and
// entries, reads no class list, and leaves the device exactly as a full
// apply of the same flows would (a fresh backend adopting it writes
// nothing); packets of an added flow reach its class.
func TestIntegrationBackendUpdate(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	be, pol := l.openWithoutPool()
	input := map[uint64][]shaper.Flow{}
	for s := uint64(1); s <= 20; s++ {
		input[s] = []shaper.Flow{updateFlow(s, 1, 1, 0)}
	}
	all := func() []shaper.Flow {
		var out []shaper.Flow
		for _, s := range slices.Sorted(maps.Keys(input)) {
			out = append(out, input[s]...)
		}
		return out
	}
	if _, err := be.Apply(ctx, all(), pol.Shaper(), shaper.ApplyOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	reads := be.Reconciler().ClassListReads()
	steps := []struct {
		name     string
		seid     uint64
		flows    []shaper.Flow
		maxWrite int
	}{
		{"add a flow", 5, []shaper.Flow{updateFlow(5, 1, 1, 0), updateFlow(5, 2, 2, 0)}, 3},
		// The class, and its FIFO leaf where a new ceil resizes it.
		{"change a rate", 5, []shaper.Flow{updateFlow(5, 1, 3, 0), updateFlow(5, 2, 2, 0)}, 2},
		// The session class and two flow classes created (with their
		// leaf qdiscs where the leaf is fq_codel), the flow's old class
		// deleted, its entry unbound, two entries bound.
		{"non-GBR flows under a session AMBR", 6, []shaper.Flow{updateFlow(6, 1, 0, 10), updateFlow(6, 2, 0, 10)}, 9},
		{"remove a flow", 5, []shaper.Flow{updateFlow(5, 2, 2, 0)}, 2},
		{"session gone", 6, nil, 5},
		{"new session", 40, []shaper.Flow{updateFlow(40, 1, 1, 0)}, 3},
	}
	for _, st := range steps {
		if len(st.flows) == 0 {
			delete(input, st.seid)
		} else {
			input[st.seid] = st.flows
		}
		rep, err := be.Update(ctx, map[uint64][]shaper.Flow{st.seid: st.flows}, pol.Shaper())
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		t.Logf("%s: %s", st.name, rep.Summary)
		if rep.Writes == 0 || rep.Writes > st.maxWrite {
			t.Errorf("%s: %d writes (%s), want 1..%d", st.name, rep.Writes, rep.Summary, st.maxWrite)
		}
		if n := be.Reconciler().ClassListReads(); n != reads {
			t.Errorf("%s: read the class list (%d reads, want %d)", st.name, n, reads)
		}
		// A fresh backend plans the same flows against the device and
		// finds nothing to write.
		fresh := l.open(Options{})
		if rep, err := fresh.Apply(ctx, all(), pol.Shaper(), shaper.ApplyOptions{Strict: true}); err != nil || !rep.InSync() {
			t.Fatalf("%s: a full apply of the same flows: %v, %s; want in sync", st.name, err, rep.Summary)
		}
	}
	c, ok := classOf(be, shaper.FlowID{SEID: 40, QERID: 1})
	if !ok {
		t.Fatal("no class for the new session's flow")
	}
	l.send(t, 40<<8|1, 3, 300)
	l.waitPackets(t, be.Reconciler(), c, 3)
	if rep, err := be.Update(ctx, map[uint64][]shaper.Flow{40: input[40]}, pol.Shaper()); err != nil || rep.Writes != 0 {
		t.Errorf("same session again: %v, %d writes; want none", err, rep.Writes)
	}
}

// classOf returns the minor of a flow's class in the backend's plan.
func classOf(be *Backend, id shaper.FlowID) (uint16, bool) {
	for _, c := range be.Classes() {
		if c.Role == shaper.RoleFlow && c.Flow == id {
			var maj, min uint16
			if _, err := fmt.Sscanf(c.Handle, "%x:%x", &maj, &min); err == nil {
				return min, true
			}
		}
	}
	return 0, false
}
