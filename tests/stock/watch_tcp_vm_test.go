package stock

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/tests/vm"
)

const watchTCPGuestEnv = "GTPQOS_WATCH_TCP_GUEST"

// TestVMWatchTCP runs TestWatchTCPGuest in the Debian 6.1 guest on
// $GTP5G_KO, stock or patched: 'make vm-test' runs it when GTP5G_KO is set;
// alone:
//
//	GTPQOS_VM=1 GTP5G_KO=/path/to/gtp5g.ko go test -run TestVMWatchTCP -v ./tests/stock/
func TestVMWatchTCP(t *testing.T) {
	if os.Getenv("GTPQOS_IN_VM") == "1" {
		t.Skip("host-side launcher; inside the VM TestWatchTCPGuest runs")
	}
	runGuest(t, "TestWatchTCPGuest", map[string]string{watchTCPGuestEnv: "1"}, map[string]string{"gtpqos": vm.BuildBinary(t, "./cmd/gtpqos")}, 8*time.Minute)
}

// watchStatus is the part of 'gtpqos status --json' read here.
type watchStatus struct {
	MarkMode string `json:"mark_mode"`
	Flows    []struct {
		QER       uint32 `json:"qer"`
		Direction string `json:"direction"`
		Class     string `json:"class"`
	} `json:"flows"`
}

// TestWatchTCPGuest runs the product's own path on free5GC's rule shapes
// (addFree5GCSession): 'gtpqos watch' follows gtp5g, and bulk TCP of the
// default path (from 10.200.0.3, which no SDF rule names), of GBR flow A
// and of non-GBR flow C ([AMBR, flow] QERs), one at a time, must land in
// that flow's class, with under 1% of N3's packets in the default class.
// With watch's default (--mark-mode current) the module's mark mode stays
// off and packets are classified by TEID and SDF rules; on the patched
// module it runs again with --mark-mode auto (mode pdr: by mark).
func TestWatchTCPGuest(t *testing.T) {
	if os.Getenv("GTPQOS_IN_VM") != "1" || os.Getenv(watchTCPGuestEnv) != "1" {
		t.Skip("runs inside the VM only (started by TestVMWatchTCP with GTP5G_KO)")
	}
	_, err := os.Stat("/proc/gtp5g/qos_mark")
	patched := err == nil
	t.Run("current", func(t *testing.T) { watchTCP(t, "current", "off", patched) })
	if patched {
		t.Run("auto", func(t *testing.T) { watchTCP(t, "auto", "pdr", patched) })
	}
}

// watchTCP runs TestWatchTCPGuest's phases under watch --mark-mode
// markMode, which must leave the patched module in mark mode want.
func watchTCP(t *testing.T, markMode, want string, patched bool) {
	root, gnb, dn := stockTopology(t)
	addFree5GCSession(t, root)
	gtpqos := filepath.Join(os.Getenv("VM_WORK"), "gtpqos")
	cfg := filepath.Join(t.TempDir(), "watch.yaml")
	if err := os.WriteFile(cfg, []byte("policy:\n  non_gbr_min: 100kbit\n  default_rate: 100kbit\n  pool: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := exec.Command(gtpqos, "watch", "--config", cfg, "--n3", "n3", "--n6", "n6", "--link-rate", "7500kbit",
		"--metrics-addr", "off", "--mark-mode", markMode, "--poll", "500ms")
	var log strings.Builder
	w.Stdout, w.Stderr = &log, &log
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.Process.Signal(os.Interrupt)
		_ = w.Wait()
		t.Logf("watch log:\n%s", log.String())
		_ = exec.Command(gtpqos, "reset", "--dev", "n3").Run()
		_ = exec.Command(gtpqos, "reset", "--dev", "n6").Run()
	})
	st := waitFlowClasses(t, gtpqos, map[uint32]bool{2: true, 3: true, 5: true})
	t.Logf("--mark-mode %s: mark mode %s", markMode, st.MarkMode)
	if patched && st.MarkMode != want {
		t.Errorf("patched module under --mark-mode %s: mark mode %q, want %s", markMode, st.MarkMode, want)
	}
	class := map[uint32]string{}
	for _, f := range st.Flows {
		if f.Direction == "downlink" {
			class[f.QER] = f.Class
		}
	}
	for _, p := range []struct {
		name, src string
		qer       uint32
	}{{"default path", "10.200.0.3", 2}, {"A", "10.200.0.2", 3}, {"C", "10.200.0.4", 5}} {
		before := n3Classes(t)
		bulkTCP(t, gnb.NetNS.Name, dn.NetNS.Name, p.src)
		after := n3Classes(t)
		judgeTCPPhase(t, p.name, class[p.qer], before, after)
	}
}

// waitFlowClasses polls status until every downlink flow of qers has a
// class, and returns that status.
func waitFlowClasses(t *testing.T, gtpqos string, qers map[uint32]bool) watchStatus {
	t.Helper()
	var st watchStatus
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		out, err := exec.Command(gtpqos, "status", "--json", "--n3", "n3", "--n6", "n6", "--interval", "0").Output()
		st = watchStatus{}
		if err == nil && json.Unmarshal(out, &st) == nil {
			n := 0
			for _, f := range st.Flows {
				if f.Direction == "downlink" && qers[f.QER] && f.Class != "" {
					n++
				}
			}
			if n == len(qers) {
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s, status gives no class to every flow of QERs %v: %+v (%v)", qers, st, err)
		}
	}
}

// bulkTCP runs one 8-second iperf3 TCP transfer from src in the DN to the
// UE (10.60.0.1 in the gNB's namespace).
func bulkTCP(t *testing.T, gnbNS, dnNS, src string) {
	t.Helper()
	srv := exec.Command("ip", "netns", "exec", gnbNS, "iperf3", "-s", "-1", "-B", "10.60.0.1", "-p", "5301")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _, _ = srv.Process.Wait() }()
	// Until the server listens: a fixed second was too short for a loaded
	// host's guest (the client's connection refused).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _ := exec.Command("ip", "netns", "exec", gnbNS, "ss", "-Hltn", "sport = :5301").Output()
		if len(strings.TrimSpace(string(out))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("iperf3 server in %s not listening on 10.60.0.1:5301 after 30 s", gnbNS)
		}
	}
	out, err := exec.Command("ip", "netns", "exec", dnNS, "iperf3", "-c", "10.60.0.1", "-B", src, "-p", "5301", "-t", "8").CombinedOutput()
	if err != nil {
		t.Fatalf("iperf3 TCP from %s: %v\n%s", src, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("TCP from %s: %s", src, lines[len(lines)-1-min(2, len(lines)-1)])
}

// n3Class is one class on n3: its parent and packet counter.
type n3Class struct {
	parent  string
	packets uint64
}

// n3Classes reads every class on n3 by handle ("major:minor", hex).
func n3Classes(t *testing.T) map[string]n3Class {
	t.Helper()
	l, err := netlink.LinkByName("n3")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := netlink.ClassList(l, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]n3Class{}
	for _, c := range cs {
		at := c.Attrs()
		var n uint64
		if at.Statistics != nil && at.Statistics.Basic != nil {
			n = uint64(at.Statistics.Basic.Packets)
		}
		out[netlink.HandleStr(at.Handle)] = n3Class{parent: netlink.HandleStr(at.Parent), packets: n}
	}
	return out
}

// judgeTCPPhase checks that the flow's class counted at least 98% of the
// phase's leaf packets on n3 and the default class (the root's minor 2)
// under 1%.
func judgeTCPPhase(t *testing.T, name, class string, before, after map[string]n3Class) {
	t.Helper()
	if class == "" {
		t.Errorf("%s: no class", name)
		return
	}
	parents := map[string]bool{}
	for _, c := range after {
		parents[c.parent] = true
	}
	dflt := class[:strings.Index(class, ":")+1] + "2"
	var total, mine, inDefault uint64
	for h, c := range after {
		if parents[h] {
			continue
		}
		d := c.packets - before[h].packets
		total += d
		switch h {
		case class:
			mine = d
		case dflt:
			inDefault = d
		}
	}
	t.Logf("TCP %s: class %s %d of %d leaf packets, default class %s %d (%.3f%%)", name, class, mine, total, dflt, inDefault,
		100*float64(inDefault)/math.Max(1, float64(total)))
	if total == 0 || float64(mine) < 0.98*float64(total) {
		t.Errorf("TCP %s: its class %s counted %d of %d packets, want at least 98%%", name, class, mine, total)
	}
	if float64(inDefault) >= 0.01*float64(total) {
		t.Errorf("TCP %s: %s", name, fmt.Sprintf("%d of %d packets in the default class %s, want under 1%%", inDefault, total, dflt))
	}
}
