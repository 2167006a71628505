package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// On a machine without gtp5g (this one) status and policer status print
// exactly one line and exit 1.
func TestNotLoadedSingleLine(t *testing.T) {
	if ok, _ := kmod.Host().Loaded(); ok {
		t.Skip("gtp5g is loaded on this host")
	}
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"policer", "status"}, {"policer", "on"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 1 || errb.String() != "gtp5g module not loaded\n" || out.Len() != 0 {
			t.Errorf("gtpqos %s: exit %d, stderr %q, stdout %q; want 1, \"gtp5g module not loaded\\n\", \"\"",
				strings.Join(args, " "), code, errb.String(), out.String())
		}
	}
}

func TestPolicerUsage(t *testing.T) {
	for _, args := range [][]string{{"policer"}, {"policer", "maybe"}, {"policer", "on", "off"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("gtpqos %s: exit %d, want 2 (usage)", strings.Join(args, " "), code)
		}
	}
}

// fakeStatus is a statusSource with one GBR flow and the default flow.
type fakeStatus struct{ feats gtpnl.Features }

func (fakeStatus) loaded() (bool, error) { return true, nil }
func (f fakeStatus) version() (string, gtpnl.Features, error) {
	return "0.10.2", f.feats, nil
}
func (f fakeStatus) markMode(gtpnl.Features) (gtpnl.MarkMode, error) {
	if f.feats.Has(gtpnl.FeatureMarkCtrl) {
		return gtpnl.MarkFlow, nil
	}
	return gtpnl.MarkOff, nil
}
func (fakeStatus) policer(gtpnl.Features) (bool, string, error) { return false, "/proc/gtp5g/qos", nil }
func (fakeStatus) close()                                       {}
func (fakeStatus) rules() ([]gtpnl.QER, []gtpnl.PDR, []gtpnl.FAR, error) {
	core := gtpnl.InterfaceCore
	qers := []gtpnl.QER{
		{SEID: 7, ID: 3, QFI: 2, GBR: gtpnl.Bitrate{Downlink: 15e6}, MBR: gtpnl.Bitrate{Downlink: 18e6}, FlowMark: 0x21},
		{SEID: 7, ID: 2, QFI: 1},
	}
	pdrs := []gtpnl.PDR{
		{SEID: 7, ID: 4, FARID: 4, QERIDs: []uint32{3}, FlowMark: 0x21, QFI: 2, PDI: gtpnl.PDI{SourceInterface: &core, UEAddr: netip.MustParseAddr("10.60.0.1")}},
		{SEID: 7, ID: 2, FARID: 2, QERIDs: []uint32{2}, PDI: gtpnl.PDI{SourceInterface: &core}},
	}
	fars := []gtpnl.FAR{
		{SEID: 7, ID: 4, ApplyAction: gtpnl.ActionForw, Forwarding: &gtpnl.ForwardingParameters{OuterHeaderCreation: &gtpnl.OuterHeaderCreation{TEID: 100}}},
		{SEID: 7, ID: 2, ApplyAction: gtpnl.ActionForw},
	}
	return qers, pdrs, fars, nil
}

func TestStatusReport(t *testing.T) {
	rep, err := collectStatus(context.Background(), fakeStatus{feats: 0xf}, nil)
	if err != nil {
		t.Fatalf("collectStatus: %v", err)
	}
	want := statusReport{
		Version: "0.10.2", Features: []string{"flow-mark", "qos-events", "policer-ctrl", "mark-ctrl"},
		MarkMode: "flow", Policer: "off (/proc/gtp5g/qos)",
		Flows:    []statusFlow{{SEID: 7, QER: 3, QFI: 2, Direction: "downlink", GBR: 15e6, MBR: 18e6, Mark: 0x21, TEID: 100}},
		Devices:  []statusDevice{},
		Problems: []string{},
	}
	if diff := cmp.Diff(want, rep, cmpopts.IgnoreUnexported(statusReport{})); diff != "" {
		t.Fatalf("report differs (-want +got):\n%s", diff)
	}
	var buf bytes.Buffer
	renderStatus(&buf, rep)
	text := buf.String()
	for _, s := range []string{"gtp5g 0.10.2", "mark mode: flow", "15mbit", "18mbit", "0x21", "downlink"} {
		if !strings.Contains(text, s) {
			t.Errorf("status text lacks %q:\n%s", s, text)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back statusReport
	if err := json.Unmarshal(b, &back); err != nil || !cmp.Equal(rep, back, cmpopts.IgnoreUnexported(statusReport{})) {
		t.Errorf("JSON round trip: %v, %s", err, cmp.Diff(rep, back, cmpopts.IgnoreUnexported(statusReport{})))
	}
}

// fakeTrees is a statusTrees giving every flow class 6771:10 at 16.7 Mbit/s.
type fakeTrees struct{ calls *int }

func (f fakeTrees) read(_ context.Context, flows []shaper.Flow) (statusTreeView, error) {
	*f.calls++
	v := statusTreeView{Classes: map[statusFlowKey]statusClassInfo{}, RateSource: "fake",
		Devices: []statusDevice{{Role: "N3", Dev: "eth1", Tree: true, FlowClasses: 1, Mode: "gtpu",
			GTPU: []statusGTPU{{Filter: gtpu.FilterDownlink, ProgramID: 7, Entries: 1, Counters: &gtpu.Counters{Hit: 5, Miss: 2}}}}}}
	r := uint64(16_700_000)
	for _, f := range flows {
		v.Classes[statusFlowKey{f.ID, f.Direction}] = statusClassInfo{Class: "6771:10", Rate: &r}
	}
	return v, nil
}

func TestStatusClassColumns(t *testing.T) {
	calls := 0
	rep, err := collectStatus(context.Background(), fakeStatus{}, func() statusTrees { return fakeTrees{&calls} })
	if err != nil {
		t.Fatalf("collectStatus: %v", err)
	}
	if calls != 1 || len(rep.Flows) != 1 || rep.Flows[0].Class != "6771:10" || rep.Flows[0].Rate == nil || *rep.Flows[0].Rate != 16_700_000 || rep.Flows[0].Mark != 0 {
		t.Fatalf("flows = %+v (reads %d); want class 6771:10, rate 16.7 Mbit/s, mark 0 (stock: mark mode off)", rep.Flows, calls)
	}
	if rep.MarkMode != "off" || len(rep.Features) != 0 {
		t.Errorf("stock report: mark mode %q, features %v", rep.MarkMode, rep.Features)
	}
	var buf bytes.Buffer
	renderStatus(&buf, rep)
	for _, s := range []string{"6771:10", "16.70mbit", "N3 eth1 (downlink): tree 6771: with 1 flow classes, classification gtpu; gtpqos-gtpu-egress (program 7): 1 entries, hit 5 miss 2", "RATE: fake"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("status text lacks %q:\n%s", s, buf.String())
		}
	}

	// Without devices the columns stay '-' and the text says why.
	rep, err = collectStatus(context.Background(), fakeStatus{}, func() statusTrees { return nil })
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	renderStatus(&buf, rep)
	if rep.Flows[0].Class != "" || rep.Flows[0].Rate != nil || !strings.Contains(buf.String(), "devices: none given") {
		t.Errorf("without devices: flows %+v, text:\n%s", rep.Flows, buf.String())
	}
	if row := strings.Fields(strings.Split(buf.String(), "\n")[3]); row[len(row)-1] != "-" || row[len(row)-2] != "-" {
		t.Errorf("without devices the CLASS and RATE columns are %q, want - -", row[len(row)-2:])
	}
}

// A module that is not loaded never reaches the devices.
func TestStatusNotLoadedSkipsDevices(t *testing.T) {
	calls := 0
	_, err := collectStatus(context.Background(), notLoaded{}, func() statusTrees { calls++; return nil })
	if err != kmod.ErrNotLoaded || calls != 0 {
		t.Fatalf("err %v, device reads %d; want ErrNotLoaded and none", err, calls)
	}
}

type notLoaded struct{ fakeStatus }

func (notLoaded) loaded() (bool, error) { return false, nil }

func TestFlowClassesMapping(t *testing.T) {
	dl := func(seid uint64, qfi uint8, teid, mark uint32) shaper.Flow {
		return shaper.Flow{ID: shaper.FlowID{SEID: seid, QERID: 1}, QFI: qfi, TEID: teid, Mark: mark, Direction: shaper.Downlink}
	}
	ul := dl(9, 2, 901, 0)
	ul.Direction = shaper.Uplink
	tree := &htb.Tree{Major: htb.OwnedMajor, DefaultMinor: 2, Classes: []htb.Class{
		{Minor: 1, Role: shaper.RoleLink},
		{Minor: 2, Parent: 1, Role: shaper.RoleDefault},
		{Minor: 0x10, Parent: 1, Role: shaper.RoleFlow, TEID: 101, QFI: 2},                 // gtpu (TEID, QFI)
		{Minor: 0x11, Parent: 1, Role: shaper.RoleFlow, TEID: 102, QFI: 2},                 // same QFI, other session
		{Minor: 0x12, Parent: 1, Role: shaper.RoleFlow, Mark: 0x21},                        // mark classifier
		{Minor: 0x13, Parent: 1, Role: shaper.RoleFlow, QFI: 5},                            // QFI-only entry
		{Minor: 0x14, Parent: 1, Role: shaper.RoleFlow, TEID: 103, QFI: 3, Mark: 0x100003}, // gtpu uplink style
	}}
	flows := []shaper.Flow{
		dl(1, 2, 101, 0), dl(2, 2, 102, 0), dl(3, 1, 0, 0x21), dl(4, 5, 104, 0),
		dl(5, 3, 103, 0),  // stock: no mark, matched by (TEID, QFI)
		dl(6, 7, 106, 0),  // no entry: not shown
		dl(7, 1, 0, 0x99), // unbound mark: not shown
		ul,                // other direction: not this tree's
	}
	id := func(m uint16) uint32 { return tree.ClassID(m) }
	before := map[uint32]htb.ClassStats{id(0x10): {Bytes: 1000}, id(0x11): {Bytes: 5000}, id(0x12): {Bytes: 0}}
	after := map[uint32]htb.ClassStats{id(0x10): {Bytes: 1000 + 2_000_000}, id(0x11): {Bytes: 10}, id(0x12): {Bytes: 0}}
	got := flowClasses(tree, flows, shaper.Downlink, before, after, 2*time.Second)
	r := func(v uint64) *uint64 { return &v }
	key := func(f shaper.Flow) statusFlowKey { return statusFlowKey{f.ID, f.Direction} }
	want := map[statusFlowKey]statusClassInfo{
		key(flows[0]): {Class: "6771:10", Rate: r(8_000_000)}, // 2 MB in 2 s
		key(flows[1]): {Class: "6771:11"},                     // counter went backwards (class re-created): no rate
		key(flows[2]): {Class: "6771:12", Rate: r(0)},
		key(flows[3]): {Class: "6771:13"}, // no readings
		key(flows[4]): {Class: "6771:14"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("flowClasses (-want +got):\n%s", diff)
	}
	if got := flowClasses(tree, flows, shaper.Downlink, before, nil, time.Second); got[key(flows[0])].Rate != nil {
		t.Errorf("rate without a second reading: %v", *got[key(flows[0])].Rate)
	}
}

func TestStatusModeAndRateNames(t *testing.T) {
	for k, want := range map[shaper.ClassifierKind]string{shaper.KindFw: "mark (fw)", shaper.KindBPF: "mark (bpf)", shaper.KindGTPU: "gtpu", "": "none"} {
		if got := modeName(k); got != want {
			t.Errorf("modeName(%q) = %q, want %q", k, got, want)
		}
	}
	for v, want := range map[uint64]string{0: "0bit", 999: "999bit", 1500: "1.5kbit", 16_712_345: "16.71mbit", 2_500_000_000: "2.50gbit"} {
		if got := formatLiveRate(v); got != want {
			t.Errorf("formatLiveRate(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestStatusDevicesFromConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "watch.yaml")
	if err := os.WriteFile(cfg, []byte("n3: upfgtp\nn6: eth9\nlink_rate: 30mbit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("n3: x\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.yaml")
	for _, c := range []struct {
		name           string
		n3, n6, config string
		explicit       bool
		wantN3, wantN6 string
		wantProblem    string
	}{
		{"config", "", "", cfg, false, "upfgtp", "eth9", ""},
		{"flags win", "a3", "", cfg, true, "a3", "", ""},
		{"default config absent", "", "", missing, false, "", "", ""},
		{"named config absent", "", "", missing, true, "", "", "none.yaml"},
		{"bad config", "", "", bad, false, "", "", "bogus"},
	} {
		d, probs := statusDevices(c.n3, c.n6, c.config, c.explicit)
		if d.n3 != c.wantN3 || d.n6 != c.wantN6 {
			t.Errorf("%s: devices %q/%q, want %q/%q", c.name, d.n3, d.n6, c.wantN3, c.wantN6)
		}
		if c.wantProblem == "" && len(probs) > 0 || c.wantProblem != "" && (len(probs) != 1 || !strings.Contains(probs[0], c.wantProblem)) {
			t.Errorf("%s: problems %q, want one naming %q", c.name, probs, c.wantProblem)
		}
	}
}

func TestMarkUplink(t *testing.T) {
	ul := func(teid uint32, qfi uint8, mark uint32) shaper.Flow {
		return shaper.Flow{Direction: shaper.Uplink, TEID: teid, QFI: qfi, Mark: mark}
	}
	dl := shaper.Flow{Direction: shaper.Downlink, TEID: 201, QFI: 2}
	in := []shaper.Flow{ul(201, 2, 0), ul(202, 2, 0x7), ul(203, 5, 0), ul(204, 9, 0), dl}
	marks := map[gtpu.Key]uint32{{TEID: 201, QFI: 2}: 0x100001, {TEID: 202, QFI: 2}: 0x100002, {QFI: 5}: 0x100005}
	got := markUplink(in, marks)
	want := []uint32{0x100001, 0x7, 0x100005, 0, 0} // own mark kept; QFI-only fallback; unknown stays 0; downlink untouched
	for i, f := range got {
		if f.Mark != want[i] {
			t.Errorf("flow %d (TEID %d QFI %d %s): mark %#x, want %#x", i, f.TEID, f.QFI, f.Direction, f.Mark, want[i])
		}
	}
	if in[0].Mark != 0 {
		t.Errorf("markUplink changed its input")
	}
}
