package status

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/devlock"
)

// fakeSource is a Source with one GBR flow and the default flow.
type fakeSource struct{ feats gtpnl.Features }

func (fakeSource) Loaded() (bool, error) { return true, nil }
func (f fakeSource) Version() (string, gtpnl.Features, error) {
	return "0.10.2", f.feats, nil
}
func (f fakeSource) Families() []string {
	if f.feats == 0 {
		return []string{"gtp5g v0 (id 30, groups gtp5g)"}
	}
	return []string{"gtp5g v0 (id 30, groups gtp5g)", "gtp5g_qos v1 (id 31, groups events): " + f.feats.String()}
}
func (f fakeSource) MarkMode(gtpnl.Features) (gtpnl.MarkMode, error) {
	if f.feats.Has(gtpnl.FeatureMarkCtrl) {
		return gtpnl.MarkFlow, nil
	}
	return gtpnl.MarkOff, nil
}
func (fakeSource) Policer(gtpnl.Features) (bool, string, error) { return false, "/proc/gtp5g/qos", nil }
func (fakeSource) Close()                                       {}
func (fakeSource) Rules() ([]gtpnl.QER, []gtpnl.PDR, []gtpnl.FAR, error) {
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

// ignoreSummary leaves out Report.Summary (not in the JSON).
var ignoreSummary = cmpopts.IgnoreFields(Report{}, "Summary")

func TestStatusReport(t *testing.T) {
	rep, err := Collect(context.Background(), fakeSource{feats: 0xf}, nil)
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := Report{
		Version: "0.10.2", Features: []string{"flow-mark", "qos-events", "policer-ctrl", "mark-ctrl"},
		Families: []string{"gtp5g v0 (id 30, groups gtp5g)", "gtp5g_qos v1 (id 31, groups events): flow-mark,qos-events,policer-ctrl,mark-ctrl"},
		MarkMode: "flow", Policer: "off (/proc/gtp5g/qos)",
		Flows:    []Flow{{SEID: 7, QER: 3, QFI: 2, Direction: "downlink", GBR: 15e6, MBR: 18e6, Mark: 0x21, TEID: 100}},
		Devices:  []Device{},
		Problems: []string{},
	}
	if diff := cmp.Diff(want, rep, ignoreSummary); diff != "" {
		t.Fatalf("report differs (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || !cmp.Equal(rep, back, ignoreSummary) {
		t.Errorf("JSON round trip: %v, %s", err, cmp.Diff(rep, back, ignoreSummary))
	}
}

// fakeTrees is a Trees giving every flow class 6771:10 at 16.7 Mbit/s.
type fakeTrees struct{ calls *int }

func (f fakeTrees) Read(_ context.Context, flows []shaper.Flow) (TreeView, error) {
	*f.calls++
	v := TreeView{Classes: map[FlowKey]ClassInfo{}, RateSource: "fake",
		Devices: []Device{{Role: "N3", Dev: "eth1", Tree: true, Root: "6771:", FlowClasses: 1, Mode: "gtpu"}}}
	r := uint64(16_700_000)
	for _, f := range flows {
		v.Classes[FlowKey{f.ID, f.Direction}] = ClassInfo{Class: "6771:10", Rate: &r}
	}
	return v, nil
}

func TestStatusClassColumns(t *testing.T) {
	calls := 0
	rep, err := Collect(context.Background(), fakeSource{}, func() Trees { return fakeTrees{&calls} })
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	if calls != 1 || len(rep.Flows) != 1 || rep.Flows[0].Class != "6771:10" || rep.Flows[0].Rate == nil || *rep.Flows[0].Rate != 16_700_000 || rep.Flows[0].Mark != 0 {
		t.Fatalf("flows = %+v (reads %d); want class 6771:10, rate 16.7 Mbit/s, mark 0 (stock: mark mode off)", rep.Flows, calls)
	}
	if rep.MarkMode != "off" || len(rep.Features) != 0 {
		t.Errorf("stock report: mark mode %q, features %v", rep.MarkMode, rep.Features)
	}
	if len(rep.Devices) != 1 || rep.Devices[0].Dev != "eth1" || rep.RateSource != "fake" {
		t.Errorf("devices %+v, rate source %q; want the trees' eth1 and 'fake'", rep.Devices, rep.RateSource)
	}

	// Without devices the columns stay empty.
	rep, err = Collect(context.Background(), fakeSource{}, func() Trees { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if rep.Flows[0].Class != "" || rep.Flows[0].Rate != nil || rep.Devices == nil || len(rep.Devices) != 0 {
		t.Errorf("without devices: flows %+v, devices %#v", rep.Flows, rep.Devices)
	}
}

// A module that is not loaded never reaches the devices.
func TestStatusNotLoadedSkipsDevices(t *testing.T) {
	calls := 0
	_, err := Collect(context.Background(), notLoaded{}, func() Trees { calls++; return nil })
	if !errors.Is(err, kmod.ErrNotLoaded) || calls != 0 {
		t.Fatalf("err %v, device reads %d; want ErrNotLoaded and none", err, calls)
	}
}

type notLoaded struct{ fakeSource }

func (notLoaded) Loaded() (bool, error) { return false, nil }

// testReading builds a reading of direction dir as inspect does (an index of
// the inspected flow classes, which carry no flow id), with the second
// counter reading last taken elapsed after the first.
func testReading(dir shaper.Direction, classes []shaper.ClassState, last map[string]shaper.Counters, elapsed time.Duration) *reading {
	in := &shaper.Inspection{Owned: true, Classes: classes}
	r := &reading{dir: dir, in: in, at: time.Now().Add(-elapsed), last: last, ix: shaper.NewIndex[shaper.ClassState](len(classes))}
	for _, c := range in.FlowClasses() {
		r.ix.Add(c.Flow, c.Key, c)
	}
	return r
}

func TestFlowClassesMapping(t *testing.T) {
	dl := func(seid uint64, qfi uint8, teid, mark uint32) shaper.Flow {
		return shaper.Flow{ID: shaper.FlowID{SEID: seid, QERID: 1}, QFI: qfi, TEID: teid, Mark: mark, Direction: shaper.Downlink}
	}
	ul := dl(9, 2, 901, 0)
	ul.Direction = shaper.Uplink
	flow := func(handle string, k shaper.Key, bytes uint64) shaper.ClassState {
		return shaper.ClassState{Handle: handle, Parent: "6771:1", Role: shaper.RoleFlow, Key: k, Counters: shaper.Counters{Bytes: bytes}}
	}
	classes := []shaper.ClassState{
		{Handle: "6771:1", Role: shaper.RoleLink},
		{Handle: "6771:2", Parent: "6771:1", Role: shaper.RoleDefault},
		flow("6771:10", shaper.Key{TEID: 101, QFI: 2}, 1000),              // gtpu (TEID, QFI)
		flow("6771:11", shaper.Key{TEID: 102, QFI: 2}, 5000),              // same QFI, other session
		flow("6771:12", shaper.Key{Mark: 0x21}, 0),                        // mark classifier
		flow("6771:13", shaper.Key{QFI: 5}, 0),                            // QFI-only entry
		flow("6771:14", shaper.Key{TEID: 103, QFI: 3, Mark: 0x100003}, 0), // gtpu uplink style
	}
	flows := []shaper.Flow{
		dl(1, 2, 101, 0), dl(2, 2, 102, 0), dl(3, 1, 0, 0x21), dl(4, 5, 104, 0),
		dl(5, 3, 103, 0),  // stock: no mark, matched by (TEID, QFI)
		dl(6, 7, 106, 0),  // no entry: not shown
		dl(7, 1, 0, 0x99), // unbound mark: not shown
		ul,                // other direction: not this tree's
	}
	last := map[string]shaper.Counters{"6771:10": {Bytes: 1000 + 2_000_000}, "6771:11": {Bytes: 10}, "6771:12": {Bytes: 0}}
	got := testReading(shaper.Downlink, classes, last, 2*time.Second).classes(flows)
	key := func(f shaper.Flow) FlowKey { return FlowKey{f.ID, f.Direction} }
	// 2 MB in (a little over) 2 s: about 8 Mbit/s.
	if ci := got[key(flows[0])]; ci.Rate == nil || *ci.Rate > 8_000_000 || *ci.Rate < 7_900_000 {
		t.Errorf("flow 1: %+v; want a rate of about 8 Mbit/s", ci)
	} else {
		got[key(flows[0])] = ClassInfo{Class: ci.Class, Rate: r(8_000_000)}
	}
	want := map[FlowKey]ClassInfo{
		key(flows[0]): {Class: "6771:10", Rate: r(8_000_000)},
		key(flows[1]): {Class: "6771:11"}, // counter went backwards (class re-created): no rate
		key(flows[2]): {Class: "6771:12", Rate: r(0)},
		key(flows[3]): {Class: "6771:13"}, // no second reading
		key(flows[4]): {Class: "6771:14"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("classes (-want +got):\n%s", diff)
	}
	if got := testReading(shaper.Downlink, classes, nil, time.Second).classes(flows); got[key(flows[0])].Rate != nil || got[key(flows[0])].Class != "6771:10" {
		t.Errorf("without a second reading: %+v; want class 6771:10, no rate", got[key(flows[0])])
	}
}

func r(v uint64) *uint64 { return &v }

// On N6 the uplink classes read back through the GTP-U uplink view carry
// (TEID, QFI) and mark: a stock flow (no mark) is found by (TEID, QFI), a
// flow with its own mark by that mark, an unknown (TEID, QFI) by the
// QFI-only entry; the rest and the other direction are not shown. The
// flows are not changed.
func TestUplinkClasses(t *testing.T) {
	ul := func(seid uint64, teid uint32, qfi uint8, mark uint32) shaper.Flow {
		return shaper.Flow{ID: shaper.FlowID{SEID: seid, QERID: 2}, Direction: shaper.Uplink, TEID: teid, QFI: qfi, Mark: mark}
	}
	dl := shaper.Flow{ID: shaper.FlowID{SEID: 1, QERID: 1}, Direction: shaper.Downlink, TEID: 201, QFI: 2}
	flow := func(handle string, k shaper.Key) shaper.ClassState {
		return shaper.ClassState{Handle: handle, Parent: "6771:1", Role: shaper.RoleFlow, Key: k}
	}
	classes := []shaper.ClassState{
		flow("6771:10", shaper.Key{TEID: 201, QFI: 2, Mark: 0x100001}),
		flow("6771:11", shaper.Key{TEID: 202, QFI: 2, Mark: 0x100002}),
		flow("6771:12", shaper.Key{QFI: 5, Mark: 0x100005}),
		flow("6771:13", shaper.Key{Mark: 0x7}),
	}
	in := []shaper.Flow{ul(1, 201, 2, 0), ul(2, 202, 2, 0x7), ul(3, 203, 5, 0), ul(4, 204, 9, 0), dl}
	orig := append([]shaper.Flow(nil), in...)
	got := testReading(shaper.Uplink, classes, nil, 0).classes(in)
	want := map[FlowKey]ClassInfo{
		{in[0].ID, shaper.Uplink}: {Class: "6771:10"},
		{in[1].ID, shaper.Uplink}: {Class: "6771:13"}, // own mark wins
		{in[2].ID, shaper.Uplink}: {Class: "6771:12"}, // QFI-only fallback
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("uplink classes (-want +got):\n%s", diff)
	}
	if !cmp.Equal(in, orig) {
		t.Errorf("classes changed its input")
	}
}

func TestStatusModeNames(t *testing.T) {
	for k, want := range map[classify.Kind]string{classify.KindFw: "mark (fw)", classify.KindBPF: "mark (bpf)", classify.KindGTPU: "gtpu", "": "none"} {
		if got := ModeName(k); got != want {
			t.Errorf("ModeName(%q) = %q, want %q", k, got, want)
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
		{"default config absent", "", "", missing, false, "", "", "none found"},
		{"named config absent", "", "", missing, true, "", "", "none.yaml"},
		{"bad config", "", "", bad, false, "", "", "bogus"},
	} {
		n3, n6, probs := Devices(c.n3, c.n6, c.config, c.explicit, t.TempDir())
		if n3 != c.wantN3 || n6 != c.wantN6 {
			t.Errorf("%s: devices %q/%q, want %q/%q", c.name, n3, n6, c.wantN3, c.wantN6)
		}
		if c.wantProblem == "" && len(probs) > 0 || c.wantProblem != "" && (len(probs) != 1 || !strings.Contains(probs[0], c.wantProblem)) {
			t.Errorf("%s: problems %q, want one naming %q", c.name, probs, c.wantProblem)
		}
	}
}

// Without --n3/--n6, status finds the devices of a running watch from the
// locks it holds (their records name each device's role), before the
// config file: the watch may run with flags the file does not have.
func TestStatusDevicesFromRunningWatch(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "watch.yaml")
	if err := os.WriteFile(cfg, []byte("n3: upfgtp\nn6: eth9\nlink_rate: 30mbit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	locks := filepath.Join(dir, "locks")
	l3, err := devlock.Acquire(locks, "n3w", devlock.Holder{Command: "watch", Role: "n3"})
	if err != nil {
		t.Fatal(err)
	}
	l6, err := devlock.Acquire(locks, "n6w", devlock.Holder{Command: "watch", Role: "n6"})
	if err != nil {
		t.Fatal(err)
	}
	la, err := devlock.Acquire(locks, "other0", devlock.Holder{Command: "apply"})
	if err != nil {
		t.Fatal(err)
	}
	defer la.Release()
	if n3, n6, probs := Devices("", "", cfg, false, locks); n3 != "n3w" || n6 != "n6w" || len(probs) > 0 {
		t.Errorf("with a watch running: devices %q/%q (%v), want n3w/n6w", n3, n6, probs)
	}
	if n3, n6, _ := Devices("", "", cfg, true, locks); n3 != "upfgtp" || n6 != "eth9" {
		t.Errorf("--config named: devices %q/%q, want the file's", n3, n6)
	}
	if n3, n6, _ := Devices("x3", "", cfg, false, locks); n3 != "x3" || n6 != "" {
		t.Errorf("--n3 given: devices %q/%q, want x3 alone", n3, n6)
	}
	l3.Release()
	l6.Release()
	if n3, n6, _ := Devices("", "", cfg, false, locks); n3 != "upfgtp" || n6 != "eth9" {
		t.Errorf("watch gone: devices %q/%q, want the config's", n3, n6)
	}
}

// Without --lock-dir, status looks for the watch's locks where watch keeps
// them: the config's lock_dir (else the default), and finding no devices
// says in one line where it looked.
func TestStatusDevicesLockDirFromConfig(t *testing.T) {
	dir := t.TempDir()
	locks := filepath.Join(dir, "wlocks")
	cfg := filepath.Join(dir, "watch.yaml")
	if err := os.WriteFile(cfg, []byte("lock_dir: "+locks+"\nlink_rate: 30mbit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l3, err := devlock.Acquire(locks, "n3w", devlock.Holder{Command: "watch", Role: "n3"})
	if err != nil {
		t.Fatal(err)
	}
	if n3, n6, probs := Devices("", "", cfg, false, ""); n3 != "n3w" || n6 != "" || len(probs) > 0 {
		t.Errorf("lock_dir from the config: devices %q/%q (%v), want n3w", n3, n6, probs)
	}
	l3.Release()
	n3, n6, probs := Devices("", "", cfg, false, "")
	if n3 != "" || n6 != "" || len(probs) != 1 || !strings.Contains(probs[0], locks) || !strings.Contains(probs[0], "names no n3/n6") {
		t.Errorf("no watch: devices %q/%q, problems %q; want one line naming %s and the config", n3, n6, probs, locks)
	}
}
