package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/shaper"
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
	rep, err := collectStatus(context.Background(), fakeStatus{feats: 0xf})
	if err != nil {
		t.Fatalf("collectStatus: %v", err)
	}
	want := statusReport{
		Version: "0.10.2", Features: []string{"flow-mark", "qos-events", "policer-ctrl", "mark-ctrl"},
		MarkMode: "flow", Policer: "off (/proc/gtp5g/qos)",
		Flows:    []statusFlow{{SEID: 7, QER: 3, QFI: 2, Direction: "downlink", GBR: 15e6, MBR: 18e6, Mark: 0x21, TEID: 100}},
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

func TestStatusClassHook(t *testing.T) {
	old := statusClasses
	t.Cleanup(func() { statusClasses = old })
	statusClasses = func(_ context.Context, flows []shaper.Flow) (map[statusFlowKey]statusClassInfo, error) {
		out := map[statusFlowKey]statusClassInfo{}
		for _, f := range flows {
			out[statusFlowKey{f.ID, f.Direction}] = statusClassInfo{Class: "1:10", Rate: 16_700_000}
		}
		return out, nil
	}
	rep, err := collectStatus(context.Background(), fakeStatus{})
	if err != nil {
		t.Fatalf("collectStatus: %v", err)
	}
	if len(rep.Flows) != 1 || rep.Flows[0].Class != "1:10" || rep.Flows[0].Rate != 16_700_000 || rep.Flows[0].Mark != 0 {
		t.Fatalf("flows = %+v; want class 1:10, rate 16.7 Mbit/s, mark 0 (stock: mark mode off)", rep.Flows)
	}
	if rep.MarkMode != "off" || len(rep.Features) != 0 {
		t.Errorf("stock report: mark mode %q, features %v", rep.MarkMode, rep.Features)
	}
}
