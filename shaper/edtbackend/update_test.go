package edtbackend

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

// updateSession is session seid's flows in round r of the random updates:
// a default flow under the session AMBR, sometimes a second non-GBR flow
// and a GBR flow; none when the session is released. GBRs stay far below
// the link, so admission refuses nothing whatever the order.
func updateSession(rng *rand.Rand, seid uint64) []shaper.Flow {
	if rng.IntN(4) == 0 {
		return nil
	}
	mark := func(q uint32) uint32 { return uint32(seid)<<4 | q }
	ambr := uint64(1+rng.IntN(4)) * 1e6
	fs := []shaper.Flow{{ID: shaper.FlowID{SEID: seid, QERID: 1}, Name: "default", QFI: 9, SessionAMBR: ambr, Mark: mark(1)}}
	if rng.IntN(2) == 0 {
		fs = append(fs, shaper.Flow{ID: shaper.FlowID{SEID: seid, QERID: 2}, Name: "C", QFI: 8, MBR: uint64(1+rng.IntN(3)) * 5e5, SessionAMBR: ambr, Mark: mark(2)})
	}
	if rng.IntN(2) == 0 {
		fs = append(fs, shaper.Flow{ID: shaper.FlowID{SEID: seid, QERID: 3}, Name: "A", QFI: 1, GBR: uint64(1+rng.IntN(3)) * 1e5, MBR: 1e6, Mark: mark(3)})
	}
	return fs
}

// Updates that plan only the sessions they are given leave the maps and
// the tree exactly as a full Apply of every flow would: after random
// adds, changes and releases of sessions, a backend opened afresh (which
// reads the maps back from the kernel) applies every flow with no write.
// Each Update writes only its sessions' entries, a class only when the GBR
// sum moves. Needs sch_fq (the VM).
func TestIntegrationUpdateMatchesFullApply(t *testing.T) {
	ns, dev := edtDevice(t, "eu-", "euu")
	ctx, pol := context.Background(), testPolicy()
	rng := rand.New(rand.NewPCG(7, 11))
	all := map[uint64][]shaper.Flow{}
	for seid := uint64(1); seid <= 12; seid++ {
		all[seid] = updateSession(rng, seid)
	}
	flat := func() []shaper.Flow { return slices.Concat(slices.Collect(maps.Values(all))...) }
	b := openIn(t, ns, dev)
	if _, err := b.Apply(ctx, flat(), pol, shaper.ApplyOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	if b.inc == nil {
		t.Fatal("no incremental index after a full apply of marked flows")
	}
	for round := range 40 {
		seid := uint64(1 + rng.IntN(14))
		all[seid] = updateSession(rng, seid)
		rep, err := b.Update(ctx, map[uint64][]shaper.Flow{seid: all[seid]}, pol)
		if err != nil {
			t.Fatalf("round %d: update of session %d: %v", round, seid, err)
		}
		for _, ch := range rep.Changes {
			if ch.Object == "flow" && ch.Flow.SEID != seid && ch.Flow != (shaper.FlowID{}) || ch.Object == "qdisc" {
				t.Errorf("round %d: update of session %d wrote %s", round, seid, ch)
			}
		}
	}
	if b.inc == nil || b.failed {
		t.Fatal("the updates left the incremental path")
	}
	full := MakePlan(flat(), pol)
	if !slices.Equal(b.last.Classes, full.Classes) || !maps.Equal(b.last.Sessions, full.Sessions) || len(b.last.Flows) != len(full.Flows) {
		t.Errorf("kept plan: classes %v sessions %v, %d flows; a full plan: %v %v, %d", b.last.Classes, b.last.Sessions, len(b.last.Flows), full.Classes, full.Sessions, len(full.Flows))
	}
	b.Close()
	b = openIn(t, ns, dev)
	defer b.Close()
	if rep, err := b.Apply(ctx, flat(), pol, shaper.ApplyOptions{Strict: true}); err != nil || rep.Writes != 0 {
		t.Errorf("full apply over the updated maps: %v, %d writes %v; want none", err, rep.Writes, rep.Changes)
	}
}
