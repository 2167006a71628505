//go:build linux

package gtpnl_test

import (
	"context"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/tests/gtp5gtest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// checkEventSeqPerNetns checks that the patch counts event sequence
// numbers per network namespace: rule changes in a second netns that has
// its own listener (a second UPF on the same host) must leave no gap in
// the sequence a subscriber of the first netns sees. With a module-wide
// counter the first subscriber would get ErrResync here.
func checkEventSeqPerNetns(t *testing.T, c *gtpnl.Client, r *gtp5gtest.Rules) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ns2 := testenv.NewNetNS(t)
	g2 := gtp5gtest.In(ns2.Name, ns2)
	const dev2 = "gtpnl1"
	g2.AddLink(t, dev2, gtp5gtest.RoleUPF)
	r2 := g2.DialRules(t, dev2)
	var c2 *gtpnl.Client
	if err := g2.Do(func() (err error) { c2, err = gtpnl.Dial(); return err }); err != nil {
		t.Fatalf("netns %s: gtpnl dial: %v", ns2.Name, err)
	}
	defer c2.Close()

	sub1, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe in the first netns: %v", err)
	}
	defer sub1.Close()
	sub2, err := c2.Subscribe(ctx)
	if err != nil {
		t.Fatalf("netns %s: Subscribe: %v", ns2.Name, err)
	}
	defer sub2.Close()

	r.UpdateQER(t, 1, 4, gtp5gtest.QER{QFI: 3, GBRKbps: 5000, MBRKbps: 7000})
	const updates = 5
	r2.AddQER(t, 1, 1, gtp5gtest.QER{QFI: 1, MBRKbps: 1000})
	for i := 1; i <= updates; i++ {
		r2.UpdateQER(t, 1, 1, gtp5gtest.QER{QFI: 1, MBRKbps: uint64(1000 + i)})
	}
	// The second netns's listener got every one of its events, so they
	// were built and sent (and counted) before the next change below.
	ev2 := receiveEvents(t, "second netns", sub2, updates+1)
	for i, e := range ev2 {
		if e.Ifname != dev2 || e.QER == nil || e.Seq != ev2[0].Seq+uint32(i) {
			t.Fatalf("second netns event %d: %s; want a QER event on %s, seq %d", i, e, dev2, ev2[0].Seq+uint32(i))
		}
	}
	r.UpdateQER(t, 1, 4, gtp5gtest.QER{QFI: 3, GBRKbps: 5000, MBRKbps: 8000})

	ev1 := receiveEvents(t, "first netns", sub1, 2)
	for _, e := range ev1 {
		if e.Ifname != "gtpnl0" || e.QER == nil || e.QER.ID != 4 {
			t.Fatalf("first netns event %s; want an update of QER 4 on gtpnl0", e)
		}
	}
	if ev1[1].Seq != ev1[0].Seq+1 {
		t.Fatalf("first netns events seq %d then %d: the second netns's %d events consumed its numbers", ev1[0].Seq, ev1[1].Seq, updates+1)
	}
	t.Logf("per-netns event seq: first netns %d, %d around %d events (seq %d..%d) in the second",
		ev1[0].Seq, ev1[1].Seq, len(ev2), ev2[0].Seq, ev2[len(ev2)-1].Seq)
}

// receiveEvents reads until n events have arrived; any error, including
// a sequence gap (ErrResync), fails the test.
func receiveEvents(t *testing.T, where string, sub *gtpnl.Subscription, n int) []gtpnl.Event {
	t.Helper()
	var got []gtpnl.Event
	for len(got) < n {
		evs, err := sub.Receive()
		if err != nil {
			t.Fatalf("%s: Receive after %d of %d events: %v", where, len(got), n, err)
		}
		got = append(got, evs...)
	}
	return got
}
