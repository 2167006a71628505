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
	"runtime"
	"syscall"
	"testing"
	"time"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/internal/testenv"
	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/khirono/go-nl"
	"github.com/mdlayher/netlink"
	vnl "github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
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
	const dev = "gtpnl0"
	var udp *net.UDPConn
	var client *gtpnl.Client
	var rules *gtp5gnl.Client
	var link *gtp5gnl.Link
	err := inNS(ns.Handle, func() error {
		var err error
		if udp, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2152}); err != nil {
			return err
		}
		f, err := udp.File()
		if err != nil {
			return err
		}
		defer f.Close()
		if err := createLink(dev, int(f.Fd())); err != nil {
			return err
		}
		l, err := vnl.LinkByName(dev)
		if err != nil {
			return err
		}
		if err := vnl.LinkSetUp(l); err != nil {
			return err
		}
		link = &gtp5gnl.Link{Name: dev, Index: l.Attrs().Index}
		mux, err := nl.NewMux()
		if err != nil {
			return err
		}
		go func() { _ = mux.Serve() }()
		t.Cleanup(mux.Close)
		conn, err := nl.Open(syscall.NETLINK_GENERIC)
		if err != nil {
			return err
		}
		t.Cleanup(conn.Close)
		if rules, err = gtp5gnl.NewClient(conn, mux); err != nil {
			return err
		}
		client, err = gtpnl.Dial()
		return err
	})
	if udp != nil {
		t.Cleanup(func() { _ = udp.Close() })
	}
	if err != nil {
		t.Fatalf("netns %s: set up gtp5g device: %v", ns.Name, err)
	}
	t.Cleanup(func() { _ = client.Close() })

	const sessions = 200
	start := time.Now()
	for s := uint64(1); s <= sessions; s++ {
		programSession(t, rules, link, s)
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
		checkEvents(t, client, rules, link)
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
func checkEvents(t *testing.T, c *gtpnl.Client, rules *gtp5gnl.Client, link *gtp5gnl.Link) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sub, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer sub.Close()
	if err := gtp5gnl.UpdateQEROID(rules, link, gtp5gnl.OID{1, 3}, rateAttrs(gtp5gnl.QER_MBR, 0, 20000)); err != nil {
		t.Fatalf("update QER: %v", err)
	}
	if err := gtp5gnl.RemovePDROID(rules, link, gtp5gnl.OID{1, 4}); err != nil {
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
	// in ErrResync, and the subscription must keep working afterwards.
	if err := gtpnl.SetSubscriptionReadBuffer(sub, 4096); err != nil {
		t.Fatalf("shrink the subscription's buffer: %v", err)
	}
	for s := uint64(1); s <= 100; s++ {
		if err := gtp5gnl.UpdateQEROID(rules, link, gtp5gnl.OID{s, 5}, rateAttrs(gtp5gnl.QER_MBR, 0, 31000)); err != nil {
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
	resync := false
	for quiet := false; !quiet; {
		select {
		case b := <-pump:
			switch {
			case errors.Is(b.err, gtpnl.ErrResync):
				if !resync {
					t.Logf("overrun reported as: %v", b.err)
				}
				resync = true
			case b.err != nil:
				t.Fatalf("Receive during the burst: %v", b.err)
			}
		case <-time.After(time.Second):
			quiet = true
		}
	}
	if !resync {
		t.Fatal("100 unread events into a 4 KiB buffer never gave ErrResync")
	}
	if err := gtpnl.SetSubscriptionReadBuffer(sub, 1<<20); err != nil {
		t.Fatalf("grow the subscription's buffer: %v", err)
	}
	if err := gtp5gnl.UpdateQEROID(rules, link, gtp5gnl.OID{1, 5}, rateAttrs(gtp5gnl.QER_MBR, 0, 32000)); err != nil {
		t.Fatalf("update after the overrun: %v", err)
	}
	for {
		select {
		case b := <-pump:
			if b.err != nil && !errors.Is(b.err, gtpnl.ErrResync) {
				t.Fatalf("Receive after the overrun: %v", b.err)
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

func rateAttrs(typ uint16, ul, dl uint64) []nl.Attr {
	hi, lo := gtp5gnl.QER_MBR_UL_HIGH32, gtp5gnl.QER_MBR_UL_LOW8
	dhi, dlo := gtp5gnl.QER_MBR_DL_HIGH32, gtp5gnl.QER_MBR_DL_LOW8
	return []nl.Attr{{Type: typ, Value: nl.AttrList{
		{Type: uint16(hi), Value: nl.AttrU32(ul >> 8)}, {Type: uint16(lo), Value: nl.AttrU8(ul)},
		{Type: uint16(dhi), Value: nl.AttrU32(dl >> 8)}, {Type: uint16(dlo), Value: nl.AttrU8(dl)},
	}}}
}

// programSession installs one seed-shaped session (see
// qosview/seed_test.go) with go-gtp5gnl, attribute for attribute as
// go-upf's forwarder does: UL F-TEID 2000+s on 127.0.0.1, DL TEID 1000+s
// toward 127.0.0.2:2152, UE 10.60.0.1.
func programSession(t *testing.T, c *gtp5gnl.Client, link *gtp5gnl.Link, s uint64) {
	t.Helper()
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("session %d: %s: %v", s, what, err)
		}
	}
	gate := nl.Attr{Type: gtp5gnl.QER_GATE, Value: nl.AttrU8(0)}
	qfi := func(v uint8) nl.Attr { return nl.Attr{Type: gtp5gnl.QER_QFI, Value: nl.AttrU8(v)} }
	qers := map[int][]nl.Attr{
		1: append([]nl.Attr{gate, qfi(1)}, rateAttrs(gtp5gnl.QER_MBR, 200000, 100000)...),
		2: {gate, qfi(1)},
		3: append(append([]nl.Attr{gate, qfi(2)}, rateAttrs(gtp5gnl.QER_MBR, 0, 18000)...), rateAttrs(gtp5gnl.QER_GBR, 0, 15000)...),
		4: append(append([]nl.Attr{gate, qfi(3)}, rateAttrs(gtp5gnl.QER_MBR, 0, 6000)...), rateAttrs(gtp5gnl.QER_GBR, 0, 5000)...),
		5: append([]nl.Attr{gate, qfi(4)}, rateAttrs(gtp5gnl.QER_MBR, 0, 30000)...),
	}
	for id := 1; id <= 5; id++ {
		must(fmt.Sprintf("QER %d", id), gtp5gnl.CreateQEROID(c, link, gtp5gnl.OID{s, uint64(id)}, qers[id]))
	}
	for id := 1; id <= 8; id++ {
		attrs := []nl.Attr{{Type: gtp5gnl.FAR_APPLY_ACTION, Value: nl.AttrU16(0x02)}}
		if id%2 == 0 {
			attrs = append(attrs, nl.Attr{Type: gtp5gnl.FAR_FORWARDING_PARAMETER, Value: nl.AttrList{{
				Type: gtp5gnl.FORWARDING_PARAMETER_OUTER_HEADER_CREATION, Value: nl.AttrList{
					{Type: gtp5gnl.OUTER_HEADER_CREATION_DESCRIPTION, Value: nl.AttrU16(0x0100)},
					{Type: gtp5gnl.OUTER_HEADER_CREATION_O_TEID, Value: nl.AttrU32(uint32(1000 + s))},
					{Type: gtp5gnl.OUTER_HEADER_CREATION_PORT, Value: nl.AttrU16(2152)},
					{Type: gtp5gnl.OUTER_HEADER_CREATION_PEER_ADDR_IPV4, Value: nl.AttrBytes(net.IPv4(127, 0, 0, 2).To4())},
				}}}})
		}
		must(fmt.Sprintf("FAR %d", id), gtp5gnl.CreateFAROID(c, link, gtp5gnl.OID{s, uint64(id)}, attrs))
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
			pdi = append(pdi, nl.Attr{Type: pdiSrcIntf, Value: nl.AttrU8(0)},
				nl.Attr{Type: gtp5gnl.PDI_F_TEID, Value: nl.AttrList{
					{Type: gtp5gnl.F_TEID_I_TEID, Value: nl.AttrU32(uint32(2000 + s))},
					{Type: gtp5gnl.F_TEID_GTPU_ADDR_IPV4, Value: nl.AttrBytes(net.IPv4(127, 0, 0, 1).To4())},
				}})
		} else {
			pdi = append(pdi, nl.Attr{Type: pdiSrcIntf, Value: nl.AttrU8(1)})
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
		must(fmt.Sprintf("PDR %d", id), gtp5gnl.CreatePDROID(c, link, gtp5gnl.OID{s, uint64(id)}, attrs))
	}
}

// inNS runs f on a locked thread inside the namespace.
func inNS(h netns.NsHandle, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(h); err != nil {
			errc <- err
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			errc <- err // the thread stays locked and dies with the goroutine
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// createLink sends RTM_NEWLINK for a gtp5g device (UPF role) backed by the
// UDP socket fd, in the calling thread's namespace.
func createLink(name string, fd int) error {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.IFLA_IFNAME, name)
	ae.Nested(unix.IFLA_LINKINFO, func(li *netlink.AttributeEncoder) error {
		li.String(unix.IFLA_INFO_KIND, "gtp5g")
		li.Nested(unix.IFLA_INFO_DATA, func(d *netlink.AttributeEncoder) error {
			d.Uint32(gtp5gnl.IFLA_FD1, uint32(fd))
			d.Uint32(gtp5gnl.IFLA_HASHSIZE, 1024)
			d.Uint32(gtp5gnl.IFLA_ROLE, 0)
			return nil
		})
		return nil
	})
	attrs, err := ae.Encode()
	if err != nil {
		return err
	}
	_, err = c.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_NEWLINK, Flags: netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl},
		Data:   append(make([]byte, unix.SizeofIfInfomsg), attrs...),
	})
	if err != nil {
		return fmt.Errorf("RTM_NEWLINK %s (kind gtp5g): %w", name, err)
	}
	return nil
}

// pdiSrcIntf is gtp5g's GTP5G_PDI_SRC_INTF (4): go-gtp5gnl v1.4.6 has no
// name for it (later versions, which go-upf uses, call it PDI_SRC_INTF).
const pdiSrcIntf = 4
