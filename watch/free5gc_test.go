package watch

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/tests/free5gc"
)

func TestTargetMarkModePrefersPDR(t *testing.T) {
	pdr := gtpnl.FeatureFlowMark | gtpnl.FeatureQoSEvents | gtpnl.FeaturePDRMark
	old := gtpnl.FeatureFlowMark | gtpnl.FeatureQoSEvents
	for _, tt := range []struct {
		want  string
		cur   gtpnl.MarkMode
		feats gtpnl.Features
		got   gtpnl.MarkMode
	}{
		{"auto", gtpnl.MarkOff, pdr, gtpnl.MarkPDR},
		{"auto", gtpnl.MarkQFI, old, gtpnl.MarkFlow},
		{"keep", gtpnl.MarkOff, pdr, gtpnl.MarkPDR},
		{"keep", gtpnl.MarkQFI, pdr, gtpnl.MarkQFI},
		{"qfi", gtpnl.MarkPDR, pdr, gtpnl.MarkQFI},
		{"current", gtpnl.MarkOff, pdr, gtpnl.MarkOff},
		{"current", gtpnl.MarkFlow, pdr, gtpnl.MarkFlow},
	} {
		if m := targetMarkMode(tt.want, tt.cur, tt.feats); m != tt.got {
			t.Errorf("%s from %s (features %s): %s, want %s", tt.want, tt.cur, tt.feats, m, tt.got)
		}
	}
}

// Mark mode qfi on free5GC's rules: two UEs with a flow on QFI 2 (and
// default flows on QFI 1) would merge, so watch refuses with one line
// naming the flows and the mode to use; a lone session with GBR flows on
// distinct QFIs and no non-GBR flow starts.
func TestQFIModeRefusesMerges(t *testing.T) {
	_, ue1, ue2 := free5gc.Quarter()
	d := free5gc.Build(true, ue1, ue2)
	_, problems := qosview.Build(d.QERs, d.PDRs, d.FARs, qosview.Options{MarkMode: gtpnl.MarkQFI})
	err := qfiMerges(problems, gtpnl.FeaturePDRMark)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--mark-mode pdr") ||
		!strings.Contains(err.Error(), "seid=1 qer=2") {
		t.Fatalf("two UEs in qfi mode: %v; want one line naming the flows and pointing at pdr", err)
	}

	u := &free5gc.UPF{}
	lone := u.Establish(1, "10.60.0.1", 200, 100, 5*free5gc.Mbit,
		free5gc.Flow{Name: "A", QFI: 2, GBR: 3_750_000, MBR: 4_500_000, DN: "192.168.100.2"})
	lone.N2 = true
	d = free5gc.Build(true, lone)
	flows, problems := qosview.Build(d.QERs, d.PDRs, d.FARs, qosview.Options{MarkMode: gtpnl.MarkQFI})
	if err := qfiMerges(problems, gtpnl.FeaturePDRMark); err != nil {
		t.Errorf("one session, no merge: %v", err)
	}
	if n := len(shaper.FilterDirection(flows, shaper.Downlink)); n != 2 {
		t.Errorf("%d downlink flows, want 2 (default, A)", n)
	}
}

// The metric counts the flows a plan enforces in another flow's class.
func TestNotAloneCountsSharedKeys(t *testing.T) {
	ps := []shaper.Problem{{Kind: shaper.DuplicateMark}, {Kind: shaper.DuplicateTEID}, {Kind: shaper.Clamped}}
	if n := notAlone(ps); n != 2 {
		t.Errorf("notAlone = %d, want 2", n)
	}
}
