//go:build linux

package gtpnl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/khirono/go-nl"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/tests/gtp5gtest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// TestRealGTP5G runs against a loaded gtp5g (the VM with GTP5G_KO, or a
// UPF host): it creates a gtp5g device in a fresh netns, programs
// sessions shaped like the seed's the way go-upf does (go-gtp5gnl, the
// same attributes), and checks what gtpnl dumps and qosview makes of it.
// 200 sessions make every dump span many datagrams.
func TestRealGTP5G(t *testing.T) {
	testenv.RequireRoot(t)
	if c, err := gtpnl.Dial(); err != nil {
		t.Skipf("needs the gtp5g module loaded: %v", err)
	} else {
		_ = c.Close()
	}
	ns := testenv.NewNetNS(t)
	gns := gtp5gtest.In(ns.Name, ns)
	const dev = "gtpnl0"
	gns.AddLink(t, dev, gtp5gtest.RoleUPF)
	rules := gns.DialRules(t, dev)
	var client *gtpnl.Client
	if err := gns.Do(func() (err error) { client, err = gtpnl.Dial(); return err }); err != nil {
		t.Fatalf("netns %s: gtpnl dial: %v", ns.Name, err)
	}
	t.Cleanup(func() { _ = client.Close() })

	const sessions = 200
	start := time.Now()
	for s := uint64(1); s <= sessions; s++ {
		programSession(t, rules, s)
	}
	t.Logf("programmed %d sessions (%d rules) in %s", sessions, sessions*21, time.Since(start).Round(time.Millisecond))

	v, err := client.Version()
	if err != nil || v != "0.10.2" {
		t.Fatalf("Version = %q, %v; want 0.10.2", v, err)
	}
	feats, err := client.Features()
	if err != nil {
		t.Fatalf("Features: %v", err)
	}
	t.Logf("gtp5g %s, features %v", v, feats)
	checkFamilies(t, client, feats)

	start = time.Now()
	qers, err := client.QERs()
	if err != nil {
		t.Fatalf("QERs: %v", err)
	}
	pdrs, err := client.PDRs()
	if err != nil {
		t.Fatalf("PDRs: %v", err)
	}
	fars, err := client.FARs()
	if err != nil {
		t.Fatalf("FARs: %v", err)
	}
	t.Logf("dumped %d QERs, %d PDRs, %d FARs in %s", len(qers), len(pdrs), len(fars), time.Since(start).Round(time.Millisecond))
	if len(qers) != sessions*5 || len(pdrs) != sessions*8 || len(fars) != sessions*8 {
		t.Fatalf("dumped %d QERs, %d PDRs, %d FARs; want %d, %d, %d", len(qers), len(pdrs), len(fars), sessions*5, sessions*8, sessions*8)
	}
	checkDecoded(t, qers, pdrs, fars)

	flows, problems := qosview.Build(qers, pdrs, fars, qosview.Options{})
	if len(flows) != sessions*3 {
		t.Fatalf("%d flows, want %d", len(flows), sessions*3)
	}
	for _, f := range flows {
		want := map[uint32][3]uint64{3: {15e6, 18e6, 0}, 4: {5e6, 6e6, 0}, 5: {0, 30e6, 100e6}}[f.ID.QERID]
		if f.Direction != shaper.Downlink || f.GBR != want[0] || f.MBR != want[1] || f.SessionAMBR != want[2] || f.TEID != uint32(1000+f.ID.SEID) || f.QFI != uint8(f.ID.QERID-1) {
			t.Fatalf("flow %+v does not carry the seed's contract", f)
		}
	}
	for _, p := range problems {
		if p.Kind != qosview.WireQFI || p.PDR != 8 {
			t.Errorf("unexpected problem: %s", p)
		}
	}

	if bin := os.Getenv("GTPQOS_BIN"); bin != "" {
		checkCLI(t, ns, bin, sessions)
	}
	checkKnobs(t, client, feats)
	if feats.Has(gtpnl.FeatureMarkCtrl | gtpnl.FeatureFlowMark) {
		checkFlowMarks(t, client)
	}
	if feats.Has(gtpnl.FeatureQoSEvents) {
		checkEvents(t, client, rules)
		checkEventSeqPerNetns(t, client, rules)
	}
}

// checkFamilies checks the families gtpnl found: gtp5g, and gtp5g_qos
// (the series' own, version 1, with the event group) exactly when the
// module reports features.
func checkFamilies(t *testing.T, c *gtpnl.Client, feats gtpnl.Features) {
	t.Helper()
	fams, err := c.Families()
	if err != nil {
		t.Fatalf("Families: %v", err)
	}
	for _, f := range fams {
		t.Logf("family %s", f)
	}
	if len(fams) == 0 || fams[0].Name != "gtp5g" {
		t.Fatalf("families %v: want gtp5g first", fams)
	}
	if feats == 0 {
		if len(fams) != 1 {
			t.Errorf("families %v on a module without features: want gtp5g alone", fams)
		}
		return
	}
	if len(fams) != 2 || fams[1].Name != "gtp5g_qos" || fams[1].Version != 1 || fams[1].Features != feats {
		t.Fatalf("families %v: want gtp5g and gtp5g_qos v1 with features %v", fams, feats)
	}
	if feats.Has(gtpnl.FeatureQoSEvents) && (len(fams[1].Groups) != 1 || fams[1].Groups[0] != "events") {
		t.Errorf("gtp5g_qos groups %v: want [events]", fams[1].Groups)
	}
	if len(fams[0].Groups) != 1 || fams[0].Groups[0] != "gtp5g" {
		t.Errorf("gtp5g groups %v: want [gtp5g] alone, as stock", fams[0].Groups)
	}
}

// checkDecoded compares session 1's rules with what programSession sent.
func checkDecoded(t *testing.T, qers []gtpnl.QER, pdrs []gtpnl.PDR, fars []gtpnl.FAR) {
	t.Helper()
	for _, q := range qers {
		if q.SEID == 1 && q.ID == 1 && (q.MBR != gtpnl.Bitrate{Uplink: 200e6, Downlink: 100e6} || q.QFI != 1 || !q.GBR.IsZero()) {
			t.Errorf("AMBR QER decoded as %+v", q)
		}
		if q.SEID == 1 && q.ID == 3 && (q.GBR.Downlink != 15e6 || q.MBR.Downlink != 18e6 || q.QFI != 2 || len(q.RelatedPDRs) != 2) {
			t.Errorf("flow A QER decoded as %+v", q)
		}
	}
	for _, p := range pdrs {
		if p.SEID != 1 {
			continue
		}
		switch p.ID {
		case 3:
			if p.PDI.FTEID == nil || p.PDI.FTEID.TEID != 2001 || p.PDI.FTEID.Addr != netip.MustParseAddr("127.0.0.1") || p.OuterHeaderRemoval == nil || *p.OuterHeaderRemoval != 0 {
				t.Errorf("uplink PDR 3 decoded as %+v (PDI %+v)", p, p.PDI)
			}
		case 8:
			r := p.PDI.SDF
			if p.FARID != 8 || len(p.QERIDs) != 2 || p.QERIDs[0] != 1 || p.QERIDs[1] != 5 || p.Precedence != 128 ||
				r == nil || r.Rule == nil || r.Rule.Src != netip.MustParseAddr("192.168.100.5") || r.Rule.Dst != netip.MustParseAddr("10.60.0.1") {
				t.Errorf("downlink PDR 8 decoded as %+v (SDF %+v)", p, r)
			}
		}
	}
	for _, f := range fars {
		if f.SEID == 1 && f.ID == 8 {
			o := f.Forwarding
			if f.ApplyAction != gtpnl.ActionForw || o == nil || o.OuterHeaderCreation == nil || o.OuterHeaderCreation.TEID != 1001 ||
				o.OuterHeaderCreation.Peer != netip.MustParseAddr("127.0.0.2") || o.OuterHeaderCreation.Port != 2152 {
				t.Errorf("downlink FAR 8 decoded as %+v", f)
			}
		}
	}
}

// checkCLI runs 'gtpqos status --json' (the binary in $GTPQOS_BIN) inside
// the device's netns and checks it shows every flow.
func checkCLI(t *testing.T, ns *testenv.NetNS, bin string, sessions int) {
	t.Helper()
	out := ns.Run(t, bin, "status", "--json")
	var rep struct {
		Flows []struct {
			SEID      uint64 `json:"seid"`
			QER       uint32 `json:"qer"`
			QFI       uint8  `json:"qfi"`
			Direction string `json:"direction"`
			GBR       uint64 `json:"gbr_bps"`
			MBR       uint64 `json:"mbr_bps"`
			TEID      uint32 `json:"teid"`
		} `json:"flows"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("gtpqos status --json: %v\n%.500s", err, out)
	}
	if len(rep.Flows) != sessions*3 || len(rep.Problems) != sessions {
		t.Fatalf("gtpqos status: %d flows, %d problems; want %d and %d (flow C's wire QFI)", len(rep.Flows), len(rep.Problems), sessions*3, sessions)
	}
	f := rep.Flows[0]
	if f.SEID != 1 || f.QER != 3 || f.QFI != 2 || f.Direction != "downlink" || f.GBR != 15e6 || f.MBR != 18e6 || f.TEID != 1001 {
		t.Errorf("gtpqos status: first flow %+v; want session 1's flow A", f)
	}
	t.Logf("gtpqos status --json in the device's netns: %d flows, %d problems", len(rep.Flows), len(rep.Problems))
}

// checkKnobs compares the module's knobs over genl with kmod's sysfs and
// procfs view, and checks the not-supported paths on a stock module.
func checkKnobs(t *testing.T, c *gtpnl.Client, feats gtpnl.Features) {
	t.Helper()
	mod := kmod.Host()
	if v, err := mod.Version(); err != nil || v != "0.10.2" {
		t.Errorf("kmod Version = %q, %v; want 0.10.2", v, err)
	}
	procOn, err := mod.Policer()
	if err != nil {
		t.Fatalf("kmod Policer: %v", err)
	}
	if !feats.Has(gtpnl.FeaturePolicerCtrl) {
		_, err1 := c.Policer()
		_, err2 := c.MarkMode()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err3 := c.Subscribe(ctx)
		for i, err := range []error{err1, err2, err3} {
			if !errors.Is(err, gtpnl.ErrNotSupported) || !errors.Is(err, os.ErrNotExist) {
				t.Errorf("patch call %d on stock gtp5g: %v; want ErrNotSupported", i, err)
			}
		}
		if _, err := mod.MarkMode(); !errors.Is(err, os.ErrNotExist) || errors.Is(err, kmod.ErrNotLoaded) {
			t.Errorf("kmod MarkMode on stock gtp5g: %v; want the knob absent", err)
		}
		return
	}
	on, err := c.Policer()
	if err != nil || on != procOn {
		t.Fatalf("genl Policer = %v, %v; /proc says %v", on, err, procOn)
	}
	for _, want := range []bool{!procOn, procOn} {
		if err := c.SetPolicer(want); err != nil {
			t.Fatalf("SetPolicer(%v): %v", want, err)
		}
		if got, err := mod.Policer(); err != nil || got != want {
			t.Fatalf("/proc/gtp5g/qos after genl SetPolicer(%v) = %v, %v", want, got, err)
		}
	}
	if err := mod.SetMarkMode(gtpnl.MarkQFI); err != nil {
		t.Fatalf("kmod SetMarkMode(qfi): %v", err)
	}
	if m, err := c.MarkMode(); err != nil || m != gtpnl.MarkQFI {
		t.Errorf("genl MarkMode after /proc qfi = %v, %v", m, err)
	}
	if err := c.SetMarkMode(gtpnl.MarkOff); err != nil {
		t.Fatalf("SetMarkMode(off): %v", err)
	}
	if m, err := mod.MarkMode(); err != nil || m != gtpnl.MarkOff {
		t.Errorf("/proc/gtp5g/qos_mark after genl off = %v, %v", m, err)
	}
}

// checkFlowMarks switches the patch's mark mode to flow and checks that
// every flow gets a mark of its own.
func checkFlowMarks(t *testing.T, c *gtpnl.Client) {
	t.Helper()
	if err := c.SetMarkMode(gtpnl.MarkFlow); err != nil {
		t.Fatalf("SetMarkMode(flow): %v", err)
	}
	defer func() {
		if err := c.SetMarkMode(gtpnl.MarkOff); err != nil {
			t.Errorf("SetMarkMode(off): %v", err)
		}
	}()
	qers, err1 := c.QERs()
	pdrs, err2 := c.PDRs()
	fars, err3 := c.FARs()
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatalf("dumps: %v", err)
	}
	flows, _ := qosview.Build(qers, pdrs, fars, qosview.Options{MarkMode: gtpnl.MarkFlow})
	seen := map[uint32]shaper.FlowID{}
	for _, f := range flows {
		if f.Mark == 0 || f.Mark > 0x00ffffff {
			t.Fatalf("flow %s: mark %#x outside 1..0xffffff", f.ID, f.Mark)
		}
		if other, dup := seen[f.Mark]; dup {
			t.Fatalf("flows %s and %s share mark %#x", other, f.ID, f.Mark)
		}
		seen[f.Mark] = f.ID
	}
}

// checkEvents updates and deletes rules and expects one event each.
func checkEvents(t *testing.T, c *gtpnl.Client, r *gtp5gtest.Rules) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sub, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer sub.Close()
	if err := gtp5gnl.UpdateQEROID(r.Client(), r.Link, gtp5gnl.OID{1, 3}, []nl.Attr{gtp5gtest.Rate(gtp5gnl.QER_MBR, 0, 20000)}); err != nil {
		t.Fatalf("update QER: %v", err)
	}
	if err := gtp5gnl.RemovePDROID(r.Client(), r.Link, gtp5gnl.OID{1, 4}); err != nil {
		t.Fatalf("remove PDR: %v", err)
	}
	var got []gtpnl.Event
	for len(got) < 2 {
		evs, err := sub.Receive()
		if err != nil {
			t.Fatalf("Receive after %d events: %v", len(got), err)
		}
		got = append(got, evs...)
	}
	if e := got[0]; e.Op != gtpnl.EventUpdate || e.QER == nil || e.QER.SEID != 1 || e.QER.ID != 3 || e.QER.MBR.Downlink != 20e6 || e.Ifname != "gtpnl0" {
		t.Errorf("first event %s (%+v); want update of QER 3 with MBR 20 Mbit/s on gtpnl0", e, e.QER)
	}
	if e := got[1]; e.Op != gtpnl.EventDelete || e.PDR == nil || e.PDR.SEID != 1 || e.PDR.ID != 4 || e.Seq != got[0].Seq+1 {
		t.Errorf("second event %s; want delete of PDR 4, seq %d", e, got[0].Seq+1)
	}
	// The client still answers dumps while subscribed.
	if qers, err := c.QERs(); err != nil || len(qers) == 0 {
		t.Errorf("QERs while subscribed: %d, %v", len(qers), err)
	}

	// Overrun: a tiny buffer and a burst of updates nobody reads must end
	// in one ErrResync (the events queued before the loss are dropped with
	// it, so the gap they leave is not a second one), and the
	// subscription must keep working afterwards.
	if err := sub.SetReadBuffer(4096); err != nil {
		t.Fatalf("shrink the subscription's buffer: %v", err)
	}
	for s := uint64(1); s <= 100; s++ {
		if err := gtp5gnl.UpdateQEROID(r.Client(), r.Link, gtp5gnl.OID{s, 5}, []nl.Attr{gtp5gtest.Rate(gtp5gnl.QER_MBR, 0, 31000)}); err != nil {
			t.Fatalf("update QER 5 of session %d: %v", s, err)
		}
	}
	type batch struct {
		evs []gtpnl.Event
		err error
	}
	pump := make(chan batch, 1024)
	go func() {
		for {
			evs, err := sub.Receive()
			pump <- batch{evs, err}
			if err != nil && !errors.Is(err, gtpnl.ErrResync) {
				return
			}
		}
	}()
	// The kernel flags the overrun once and then drops every event until
	// the queue is drained: read until it is quiet.
	resyncs := 0
	for quiet := false; !quiet; {
		select {
		case b := <-pump:
			switch {
			case errors.Is(b.err, gtpnl.ErrResync):
				if resyncs == 0 {
					t.Logf("overrun reported as: %v", b.err)
				}
				resyncs++
			case b.err != nil:
				t.Fatalf("Receive during the burst: %v", b.err)
			}
		case <-time.After(time.Second):
			quiet = true
		}
	}
	if resyncs != 1 {
		t.Fatalf("100 unread events into a 4 KiB buffer gave ErrResync %d times, want once", resyncs)
	}
	if err := sub.SetReadBuffer(1 << 20); err != nil {
		t.Fatalf("grow the subscription's buffer: %v", err)
	}
	if err := gtp5gnl.UpdateQEROID(r.Client(), r.Link, gtp5gnl.OID{1, 5}, []nl.Attr{gtp5gtest.Rate(gtp5gnl.QER_MBR, 0, 32000)}); err != nil {
		t.Fatalf("update after the overrun: %v", err)
	}
	for {
		select {
		case b := <-pump:
			if b.err != nil {
				t.Fatalf("Receive after the overrun: %v (the loss was reported already)", b.err)
			}
			if n := len(b.evs); n > 0 && b.evs[n-1].QER != nil && b.evs[n-1].QER.MBR.Downlink == 32e6 {
				t.Logf("after draining, the next change arrives: %s (%v)", b.evs[n-1], b.err)
				return
			}
		case <-ctx.Done():
			t.Fatal("no event for the change made after the overrun")
		}
	}
}

// programSession installs one seed-shaped session (see
// qosview/seed_test.go) with go-gtp5gnl, attribute for attribute as
// go-upf's forwarder does: UL F-TEID 2000+s on 127.0.0.1, DL TEID 1000+s
// toward 127.0.0.2:2152, UE 10.60.0.1.
func programSession(t *testing.T, r *gtp5gtest.Rules, s uint64) {
	t.Helper()
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("session %d: %s: %v", s, what, err)
		}
	}
	gate := nl.Attr{Type: gtp5gnl.QER_GATE, Value: nl.AttrU8(0)}
	qfi := func(v uint8) nl.Attr { return nl.Attr{Type: gtp5gnl.QER_QFI, Value: nl.AttrU8(v)} }
	qers := map[int][]nl.Attr{
		1: {gate, qfi(1), gtp5gtest.Rate(gtp5gnl.QER_MBR, 200000, 100000)},
		2: {gate, qfi(1)},
		3: {gate, qfi(2), gtp5gtest.Rate(gtp5gnl.QER_MBR, 0, 18000), gtp5gtest.Rate(gtp5gnl.QER_GBR, 0, 15000)},
		4: {gate, qfi(3), gtp5gtest.Rate(gtp5gnl.QER_MBR, 0, 6000), gtp5gtest.Rate(gtp5gnl.QER_GBR, 0, 5000)},
		5: {gate, qfi(4), gtp5gtest.Rate(gtp5gnl.QER_MBR, 0, 30000)},
	}
	for id := 1; id <= 5; id++ {
		must(fmt.Sprintf("QER %d", id), gtp5gnl.CreateQEROID(r.Client(), r.Link, gtp5gnl.OID{s, uint64(id)}, qers[id]))
	}
	for id := 1; id <= 8; id++ {
		attrs := gtp5gtest.FARForward(0, "")
		if id%2 == 0 {
			attrs = gtp5gtest.FARForward(uint32(1000+s), "127.0.0.2")
		}
		must(fmt.Sprintf("FAR %d", id), gtp5gnl.CreateFAROID(r.Client(), r.Link, gtp5gnl.OID{s, uint64(id)}, attrs))
	}
	ue := net.IPv4(10, 60, 0, 1).To4()
	dns := map[int]net.IP{3: net.IPv4(192, 168, 100, 2), 5: net.IPv4(192, 168, 100, 4), 7: net.IPv4(192, 168, 100, 5)}
	qerIDs := map[int][]uint32{1: {2, 1}, 3: {3}, 5: {4}, 7: {1, 5}}
	for id := 1; id <= 8; id++ {
		ul := id%2 == 1
		base := id
		if !ul {
			base = id - 1
		}
		var pdi nl.AttrList
		if ul {
			pdi = append(pdi, nl.Attr{Type: gtp5gtest.PDISrcIntf, Value: nl.AttrU8(0)},
				nl.Attr{Type: gtp5gnl.PDI_F_TEID, Value: nl.AttrList{
					{Type: gtp5gnl.F_TEID_I_TEID, Value: nl.AttrU32(uint32(2000 + s))},
					{Type: gtp5gnl.F_TEID_GTPU_ADDR_IPV4, Value: nl.AttrBytes(net.IPv4(127, 0, 0, 1).To4())},
				}})
		} else {
			pdi = append(pdi, nl.Attr{Type: gtp5gtest.PDISrcIntf, Value: nl.AttrU8(1)})
		}
		pdi = append(pdi, nl.Attr{Type: gtp5gnl.PDI_UE_ADDR_IPV4, Value: nl.AttrBytes(ue)})
		if dn, ok := dns[base]; ok {
			// go-upf's newFlowDesc for "permit out ip from DN to UE"
			// (swapped for uplink).
			src, dst := dn.To4(), ue
			if ul {
				src, dst = ue, dn.To4()
			}
			pdi = append(pdi, nl.Attr{Type: gtp5gnl.PDI_SDF_FILTER, Value: nl.AttrList{{
				Type: gtp5gnl.SDF_FILTER_FLOW_DESCRIPTION, Value: nl.AttrList{
					{Type: gtp5gnl.FLOW_DESCRIPTION_ACTION, Value: nl.AttrU8(1)},
					{Type: gtp5gnl.FLOW_DESCRIPTION_DIRECTION, Value: nl.AttrU8(2)},
					{Type: gtp5gnl.FLOW_DESCRIPTION_PROTOCOL, Value: nl.AttrU8(0xff)},
					{Type: gtp5gnl.FLOW_DESCRIPTION_SRC_IPV4, Value: nl.AttrBytes(src)},
					{Type: gtp5gnl.FLOW_DESCRIPTION_DEST_IPV4, Value: nl.AttrBytes(dst)},
				}}}})
		}
		prec := uint32(128)
		if base == 1 {
			prec = 255
		}
		attrs := []nl.Attr{
			{Type: gtp5gnl.PDR_PRECEDENCE, Value: nl.AttrU32(prec)},
			{Type: gtp5gnl.PDR_PDI, Value: pdi},
			{Type: gtp5gnl.PDR_FAR_ID, Value: nl.AttrU32(uint32(id))},
		}
		if ul {
			attrs = append(attrs, nl.Attr{Type: gtp5gnl.PDR_OUTER_HEADER_REMOVAL, Value: nl.AttrU8(0)})
		}
		for _, q := range qerIDs[base] {
			attrs = append(attrs, nl.Attr{Type: gtp5gnl.PDR_QER_ID, Value: nl.AttrU32(q)})
		}
		must(fmt.Sprintf("PDR %d", id), gtp5gnl.CreatePDROID(r.Client(), r.Link, gtp5gnl.OID{s, uint64(id)}, attrs))
	}
}
