package stock

import (
	"context"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
	"github.com/free5gc/gtpqos/tests/gtp5gtest"
)

const sdfGuestEnv = "GTPQOS_STOCK_SDF_GUEST"

// TestVMStockSDF runs TestStockSDFGuest in the Debian 6.1 guest on the
// real, unpatched gtp5g: free5GC's rule shapes, classified by the
// session's SDF rules. 'make vm-test' runs it when GTP5G_KO is set; alone:
//
//	GTPQOS_VM=1 GTP5G_KO=/path/to/gtp5g.ko go test -run TestVMStockSDF -v ./tests/stock/
func TestVMStockSDF(t *testing.T) {
	if os.Getenv("GTPQOS_IN_VM") == "1" {
		t.Skip("host-side launcher; inside the VM TestStockSDFGuest runs")
	}
	runGuest(t, "TestStockSDFGuest", map[string]string{sdfGuestEnv: "1"}, nil, 7*time.Minute)
}

// TestStockSDFGuest programs gtp5g as free5GC's SMF shapes one session
// (QER 1 session AMBR, QER 2 default, QER 3 GBR flow A from 10.200.0.2,
// QER 5 non-GBR flow C from 10.200.0.4; PDRs: default path [2, 1] at
// precedence 255, A [3], C [1, 5] at 128), reads the rules back through
// gtpnl, and classifies N3 by the session's SDF rules. gtp5g writes QFI 1
// (the AMBR QER's) into C's packets, so (TEID, QFI) would miss them; full
// size packets leave N3 in two fragments. Each flow's class must count its
// traffic, with under 1% of the packets in the default class, for UDP and
// for bulk TCP.
func TestStockSDFGuest(t *testing.T) {
	if os.Getenv("GTPQOS_IN_VM") != "1" || os.Getenv(sdfGuestEnv) != "1" {
		t.Skip("runs inside the VM only (started by TestVMStockSDF with GTP5G_KO)")
	}
	root, gnb, dn := stockTopology(t)
	const link = 7.5e6
	addFree5GCSession(t, root)

	c, err := gtpnl.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	qers, err := c.QERs()
	if err != nil {
		t.Fatal(err)
	}
	pdrs, err := c.PDRs()
	if err != nil {
		t.Fatal(err)
	}
	fars, err := c.FARs()
	if err != nil {
		t.Fatal(err)
	}
	flows, probs := qosview.Build(qers, pdrs, fars, qosview.Options{})
	rules, sprobs := qosview.SDFRules(pdrs, fars, flows)
	t.Logf("flows %+v\nproblems %v %v\nrules %+v", flows, probs, sprobs, rules)
	if len(sprobs) != 0 {
		t.Fatalf("SDF problems: %v", sprobs)
	}
	dl := shaper.FilterDirection(flows, shaper.Downlink)

	pol := plan.DefaultPolicy(uint64(link))
	pol.Classifier = classify.KindGTPU
	pol.NonGBRMin = uint64(float64(shaper.DefaultNonGBRMin) * link / linkRate)
	pol.DefaultRate = pol.NonGBRMin
	pol.Quantum, pol.Burst, pol.CBurst = plan.DefaultMaxFrame, plan.DefaultMaxFrame*4, plan.DefaultMaxFrame*4
	tree, tprobs := plan.Plan(dl, pol, nil)
	if tree == nil {
		t.Fatalf("plan: %v", tprobs)
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cls := gtpu.New(gtpu.Options{N3: "n3"})
	if _, err := cls.SetSDF(rules); err != nil {
		t.Fatal(err)
	}
	rec := htb.NewReconciler(h, "n3", htb.Options{Custom: cls.Downlink()})
	if _, err := rec.Reconcile(context.Background(), tree); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Reset(context.Background()); _ = cls.Close(h) })
	minor := map[string]uint16{}
	for _, fc := range tree.FlowClasses() {
		minor[fc.Flow.String()] = fc.Minor
	}
	a, cc := minor[shaper.FlowID{SEID: 1, QERID: 3}.String()], minor[shaper.FlowID{SEID: 1, QERID: 5}.String()]
	if a == 0 || cc == 0 {
		t.Fatalf("flow classes %v: want A (qer 3) and C (qer 5)", minor)
	}

	check := func(phase string, run func(), want map[uint16]bool) {
		before := classPackets(t, h, tree.Major)
		st0, _ := cls.Objects().Stats()
		run()
		after := classPackets(t, h, tree.Major)
		st1, _ := cls.Objects().Stats()
		var total, dflt uint64
		for m, n := range after {
			d := n - before[m]
			if isLeaf(tree, m) {
				total += d
			}
			if m == tree.DefaultMinor {
				dflt += d
			}
		}
		t.Logf("%s: leaf packets %d, default class %d (%.3f%%), A %d, C %d; gtpu_egress sdf hits %d, fragments followed %d, unseen %d, misses %d",
			phase, total, dflt, 100*float64(dflt)/math.Max(1, float64(total)), after[a]-before[a], after[cc]-before[cc],
			st1.Downlink.SDFHit-st0.Downlink.SDFHit, st1.Downlink.FragHit-st0.Downlink.FragHit, st1.Downlink.FragMiss-st0.Downlink.FragMiss,
			st1.Downlink.Miss-st0.Downlink.Miss)
		if total == 0 || float64(dflt) >= 0.01*float64(total) {
			t.Errorf("%s: %d of %d packets in the default class, want under 1%%", phase, dflt, total)
		}
		for m := range want {
			if after[m] == before[m] {
				t.Errorf("%s: class %x:%x counted nothing", phase, tree.Major, m)
			}
		}
	}
	check("UDP A + C", func() {
		got := iperf3Downlink(t, gnb.NetNS, dn.NetNS, []string{"10.200.0.2", "10.200.0.4"}, 4e6, 10, 2, 1)
		t.Logf("UDP: A %s C %s", mbit(got[0]), mbit(got[1]))
	}, map[uint16]bool{a: true, cc: true})
	check("bulk TCP C", func() {
		srv := exec.Command("ip", "netns", "exec", gnb.NetNS.Name, "iperf3", "-s", "-1", "-B", "10.60.0.1", "-p", "5301")
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = srv.Process.Kill(); _, _ = srv.Process.Wait() }()
		time.Sleep(time.Second)
		out, err := exec.Command("ip", "netns", "exec", dn.NetNS.Name, "iperf3", "-c", "10.60.0.1", "-B", "10.200.0.4",
			"-p", "5301", "-t", "10").CombinedOutput()
		if err != nil {
			t.Fatalf("iperf3 TCP: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Logf("TCP: %s", lines[len(lines)-1-min(2, len(lines)-1)])
	}, map[uint16]bool{cc: true})
}

// classPackets reads each class's packet counter on n3.
func classPackets(t *testing.T, h *netlink.Handle, major uint16) map[uint16]uint64 {
	t.Helper()
	l, err := h.LinkByName("n3")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := h.ClassList(l, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint16]uint64{}
	for _, c := range cs {
		at := c.Attrs()
		if uint16(at.Handle>>16) != major || at.Statistics == nil || at.Statistics.Basic == nil {
			continue
		}
		out[uint16(at.Handle)] = uint64(at.Statistics.Basic.Packets)
	}
	return out
}

func isLeaf(tree *plan.Tree, minor uint16) bool {
	for _, c := range tree.Classes {
		if c.Parent == minor {
			return false
		}
	}
	return true
}

// addFree5GCSession programs upfgtp as free5GC's SMF shapes one session:
// QER 1 session AMBR (4 Mbit/s), QER 2 default (QFI 1, no rate), QER 3 GBR
// flow A from 10.200.0.2, QER 5 non-GBR flow C from 10.200.0.4; PDRs: the
// uplink default path [2, 1] (F-TEID 200), the downlink default path [2, 1]
// at precedence 255, A [3] and C [1, 5] at 128, each with a FAR to the
// gNB's TEID 100.
func addFree5GCSession(t *testing.T, root gtp5gtest.NS) {
	t.Helper()
	upf := root.DialRules(t, "upfgtp")
	upf.AddQER(t, 1, 1, gtp5gtest.QER{QFI: 1, MBRKbps: 4000})
	upf.AddQER(t, 1, 2, gtp5gtest.QER{QFI: 1})
	upf.AddQER(t, 1, 3, gtp5gtest.QER{QFI: 2, GBRKbps: 2000, MBRKbps: 3000})
	upf.AddQER(t, 1, 5, gtp5gtest.QER{QFI: 4, MBRKbps: 2000})
	for _, id := range []int{2, 4, 8} {
		upf.AddFAR(t, 1, id, gtp5gtest.FARForward(100, "10.100.0.2"))
	}
	upf.AddFAR(t, 1, 1, gtp5gtest.FARForward(0, ""))
	upf.AddPDR(t, 1, 1, gtp5gtest.PDR{Precedence: 255, SrcIntf: gtp5gtest.SrcAccess, FTEID: 200, FTEIDAddr: "10.100.0.1", UEIP: "10.60.0.1",
		OHR: true, FARID: 1, QERIDs: []uint32{2, 1}})
	upf.AddPDR(t, 1, 2, gtp5gtest.PDR{Precedence: 255, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", FARID: 2, QERIDs: []uint32{2, 1}})
	upf.AddPDR(t, 1, 4, gtp5gtest.PDR{Precedence: 128, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.2", FARID: 4, QERIDs: []uint32{3}})
	upf.AddPDR(t, 1, 8, gtp5gtest.PDR{Precedence: 128, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.4", FARID: 8, QERIDs: []uint32{1, 5}})
}
