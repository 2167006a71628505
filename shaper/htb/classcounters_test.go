package htb

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// classMsg is a class message as the kernel sends one: struct tcmsg, the
// kind, and TCA_STATS2 holding the attributes given (type, value).
func classMsg(ifindex int, handle uint32, stats ...[]byte) []byte {
	tm := nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifindex), Handle: handle, Parent: rootHandle()}
	b := append([]byte(nil), tm.Serialize()...)
	b = append(b, nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("htb")).Serialize()...)
	s2 := nl.NewRtAttr(nl.TCA_STATS2, nil)
	for _, a := range stats {
		s2.AddRtAttr(int(binary.NativeEndian.Uint16(a[:2])), a[2:])
	}
	return append(b, s2.Serialize()...)
}

func attr(typ uint16, v []byte) []byte {
	return append(binary.NativeEndian.AppendUint16(nil, typ), v...)
}

func basic(bytes uint64, packets uint32) []byte {
	v := binary.NativeEndian.AppendUint64(nil, bytes)
	v = binary.NativeEndian.AppendUint32(v, packets)
	return attr(nl.TCA_STATS_BASIC, append(v, 0, 0, 0, 0)) // struct gnet_stats_basic is 16 bytes
}

func queue(qlen, backlog, drops, requeues, overlimits uint32) []byte {
	var v []byte
	for _, x := range []uint32{qlen, backlog, drops, requeues, overlimits} {
		v = binary.NativeEndian.AppendUint32(v, x)
	}
	return attr(nl.TCA_STATS_QUEUE, v)
}

func TestParseClassCounters(t *testing.T) {
	h := netlink.MakeHandle(plan.OwnedMajor, 0x10)
	cc, err := parseClassCounters(classMsg(7, h, basic(1500, 3), queue(1, 200, 4, 9, 5)))
	want := shaper.Counters{Bytes: 1500, Packets: 3, Drops: 4, Overlimits: 5, Backlog: 200, Qlen: 1}
	if err != nil || cc.ifindex != 7 || cc.handle != h || cc.c != want {
		t.Errorf("parse: %+v, %v; want %+v", cc, err, want)
	}
	// Past 2^32 packets the kernel truncates the basic count and adds the
	// full one, in either order.
	pkt64 := attr(nl.TCA_STATS_PKT64, binary.NativeEndian.AppendUint64(nil, 1<<33+7))
	for _, order := range [][][]byte{{basic(9, 7), pkt64}, {pkt64, basic(9, 7)}} {
		if cc, err := parseClassCounters(classMsg(7, h, order...)); err != nil || cc.c.Packets != 1<<33+7 || cc.c.Bytes != 9 {
			t.Errorf("64-bit packet count: %+v, %v; want %d packets", cc.c, err, uint64(1<<33+7))
		}
	}
	if _, err := parseClassCounters(classMsg(7, h)[:10]); err == nil {
		t.Error("a message shorter than struct tcmsg parsed")
	}
	bad := classMsg(7, h, basic(1, 1))
	binary.NativeEndian.PutUint16(bad[nl.SizeofTcMsg:], 0xfff0) // the first attribute's length
	if _, err := parseClassCounters(bad); err == nil {
		t.Error("an attribute longer than its message parsed")
	}
	// Garbage never panics, in the counters' parser nor in the class's.
	rng := rand.New(rand.NewPCG(1, 2))
	good := classMsg(7, h, basic(1500, 3), queue(1, 200, 4, 9, 5))
	req, err := classReq(0, &netlink.HtbClass{ClassAttrs: netlink.ClassAttrs{LinkIndex: 7, Handle: h, Parent: rootHandle()},
		Rate: 5e9, Ceil: 6e9, Buffer: 100, Cbuffer: 100, Quantum: 1500}, rateOverhead{})
	if err != nil {
		t.Fatal(err)
	}
	class := payload(t, req)
	for range 20000 {
		b := append([]byte(nil), good[:rng.IntN(len(good)+1)]...)
		for range rng.IntN(4) {
			if len(b) > 0 {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
		}
		_, _ = parseClassCounters(b)
		c := append([]byte(nil), class[:rng.IntN(len(class)+1)]...)
		for range rng.IntN(4) {
			if len(c) > 0 {
				c[rng.IntN(len(c))] = byte(rng.Uint32())
			}
		}
		_, _, _, _ = parseClass(c)
	}
}

// TestIntegrationFlowCounters: the counters metrics export are the
// kernel's, per flow class of the plan (the link, default and spare
// classes left out), and match what the full class read reports.
func TestIntegrationFlowCounters(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	be := l.open(Options{Incremental: true})
	pol := plan.DefaultPolicy(100 * mbit)
	pol.Pool = 2
	flows := []shaper.Flow{updateFlow(1, 1, 1, 0), updateFlow(2, 1, 0, 10), updateFlow(2, 2, 0, 10)}
	if got, err := be.FlowCounters(ctx); err != nil || got != nil {
		t.Fatalf("before any apply: %v, %v; want nothing", got, err)
	}
	if _, err := be.Apply(ctx, flows, pol.Shaper(), shaper.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	target, _ := be.plan.Classes.Get(be.plan.Minor[flows[0].ID])
	l.send(t, flows[0].Mark, 5, 300)
	l.waitPackets(t, be.Reconciler(), target.Minor, 5)
	got, err := be.FlowCounters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := be.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[shaper.FlowID]bool{}
	for _, fc := range got {
		seen[fc.Flow] = true
		c, _ := be.plan.Classes.Get(uint16(fc.Class))
		if c.Role != shaper.RoleFlow || c.Flow != fc.Flow || fc.Class>>16 != uint32(plan.OwnedMajor) || fc.QFI != c.QFI {
			t.Errorf("%+v: not flow %s's class (plan has %+v)", fc, fc.Flow, c)
		}
		if want := all[(&plan.Tree{Major: plan.OwnedMajor}).Handle(uint16(fc.Class))]; fc.Counters != want {
			t.Errorf("flow %s: counters %+v, the class read says %+v", fc.Flow, fc.Counters, want)
		}
		if fc.Flow == flows[0].ID && fc.Packets < 5 {
			t.Errorf("flow %s: %d packets, want at least the 5 sent", fc.Flow, fc.Packets)
		}
	}
	if len(got) != len(flows) || len(seen) != len(flows) {
		t.Errorf("%d flow counters for flows %v, want one per flow: %+v", len(got), seen, got)
	}
}

// TestFlowCountersJoin: the plan's flow classes are reported once each,
// with the counters first read for them (a dump that resumed over a
// changed tree may send a class twice); the root, default and session
// classes and classes the plan does not know are left out.
func TestFlowCountersJoin(t *testing.T) {
	pol := plan.DefaultPolicy(100 * mbit)
	flows := []shaper.Flow{updateFlow(1, 1, 1, 0), updateFlow(2, 1, 0, 10), updateFlow(2, 2, 0, 10)}
	tree, problems := plan.Plan(flows, pol, nil)
	st, err := plan.NewState(tree, shaper.GroupBySession(flows), pol, problems)
	if err != nil {
		t.Fatal(err)
	}
	var read []minorCounters
	for i, c := range tree.Classes {
		read = append(read, minorCounters{c.Minor, shaper.Counters{Packets: uint64(i + 1)}})
	}
	first := st.Minor[flows[1].ID]
	read = append(read, minorCounters{first, shaper.Counters{Packets: 999}}, minorCounters{0xfffe, shaper.Counters{Packets: 7}})
	got := flowCounters(st, read)
	if len(got) != len(flows) {
		t.Fatalf("%d flow counters, want one per flow: %+v", len(got), got)
	}
	for _, fc := range got {
		c, _ := st.Classes.Get(uint16(fc.Class))
		if c.Role != shaper.RoleFlow || c.Flow != fc.Flow || fc.Class>>16 != uint32(tree.Major) {
			t.Errorf("%+v: not flow %s's class", fc, fc.Flow)
		}
		if fc.Packets == 999 {
			t.Errorf("flow %s: the second read of its class was reported", fc.Flow)
		}
	}
}

// TestFlowCountersWhenNoneCanBeRead: before any apply there are no flow
// classes (no error); after a failed write dropped the kept plan, or after
// Close, a scrape is told why instead of reading an empty device.
func TestFlowCountersWhenNoneCanBeRead(t *testing.T) {
	ctx := context.Background()
	if got, err := (&Backend{dev: "n3"}).FlowCounters(ctx); err != nil || got != nil {
		t.Errorf("never planned: %v, %v; want nothing", got, err)
	}
	closed := &Backend{dev: "n3", planned: true}
	closed.closed.Store(true)
	for what, b := range map[string]*Backend{
		"after a failed write": {dev: "n3", planned: true},
		"after Close":          closed,
	} {
		if got, err := b.FlowCounters(ctx); err == nil || got != nil {
			t.Errorf("%s: %v, %v; want an error", what, got, err)
		} else if !strings.Contains(err.Error(), "n3") {
			t.Errorf("%s: %v does not name the device", what, err)
		}
	}
}
