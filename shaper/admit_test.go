package shaper

import (
	"testing"
)

// TestAdmitKnownFirst checks that flows holding a class are admitted before
// new ones, so a new flow never pushes an admitted one out, and that the
// admitted flows come back in FlowID order.
func TestAdmitKnownFirst(t *testing.T) {
	pol := DefaultPolicy(30 * mbit)
	old := Flow{ID: FlowID{SEID: 9, QERID: 1}, GBR: 20 * mbit, Mark: 9}
	fresh := Flow{ID: FlowID{SEID: 1, QERID: 1}, GBR: 20 * mbit, Mark: 1}
	adm := Admit([]Flow{fresh, old}, pol, func(f *Flow) int {
		if f.ID == old.ID {
			return AdmitKept
		}
		return AdmitNew
	}, nil)
	if len(adm.Flows) != 1 || adm.Flows[0].ID != old.ID {
		t.Fatalf("admitted %v, want only the known flow %s", adm.Flows, old.ID)
	}
	if p, ok := FirstError(adm.Problems); !ok || p.Kind != GBRSumAboveLink || p.Flow != fresh.ID {
		t.Errorf("problems %v, want gbr-sum-above-link for %s", adm.Problems, fresh.ID)
	}
	adm = Admit([]Flow{old, fresh}, pol, nil, nil)
	if len(adm.Flows) != 1 || adm.Flows[0].ID != fresh.ID {
		t.Errorf("without known flows the lower id goes first: admitted %v", adm.Flows)
	}
}

// TestAdmitClampAndSessions checks clamping (never below the non-GBR
// minimum) and that non-GBR flows with an AMBR are grouped per session
// while GBR flows are not.
func TestAdmitClampAndSessions(t *testing.T) {
	pol := DefaultPolicy(30 * mbit)
	pol.Admission = Clamp
	flows := []Flow{
		{ID: FlowID{SEID: 1, QERID: 1}, GBR: 25 * mbit, Mark: 1},
		{ID: FlowID{SEID: 1, QERID: 2}, GBR: 10 * mbit, Mark: 2},
		{ID: FlowID{SEID: 1, QERID: 3}, GBR: 1 * mbit, Mark: 3, SessionAMBR: 8 * mbit},
		{ID: FlowID{SEID: 2, QERID: 1}, Mark: 4, SessionAMBR: 8 * mbit},
		{ID: FlowID{SEID: 2, QERID: 2}, Mark: 5, SessionAMBR: 9 * mbit},
	}
	adm := Admit(flows, pol, nil, nil)
	if len(adm.Flows) != 4 || adm.Flows[1].GBR != 5*mbit {
		t.Fatalf("admitted %+v; want 4 flows, the second clamped to 5mbit", adm.Flows)
	}
	if len(adm.Sessions) != 1 || adm.Sessions[0].SEID != 2 || len(adm.Sessions[0].Flows) != 2 || adm.Sessions[0].AMBR != 8*mbit {
		t.Errorf("sessions %+v; want seid 2 with its two non-GBR flows at 8mbit", adm.Sessions)
	}
	kinds := map[ProblemKind]int{}
	for _, p := range adm.Problems {
		kinds[p.Kind]++
	}
	if kinds[Clamped] != 1 || kinds[GBRSumAboveLink] != 1 || kinds[AMBRConflict] != 1 {
		t.Errorf("problems %v; want one clamped, one refused (below the non-GBR minimum), one AMBR conflict", adm.Problems)
	}
}

// TestFlowRates checks the translation rules.
func TestFlowRates(t *testing.T) {
	pol := DefaultPolicy(30 * mbit)
	for _, tc := range []struct {
		f          Flow
		ambr       uint64
		rate, ceil uint64
	}{
		{Flow{GBR: 15 * mbit, MBR: 18 * mbit}, 0, 15 * mbit, 18 * mbit},
		{Flow{MBR: 50 * mbit}, 0, 1 * mbit, 30 * mbit},
		{Flow{}, 5 * mbit, 1 * mbit, 5 * mbit},
		{Flow{MBR: 500_000}, 0, 500_000, 500_000},
	} {
		if r, c := pol.FlowRates(tc.f, tc.ambr); r != tc.rate || c != tc.ceil {
			t.Errorf("FlowRates(%+v, ambr %d) = %d/%d, want %d/%d", tc.f, tc.ambr, r, c, tc.rate, tc.ceil)
		}
	}
	static := pol
	static.Mode = Static
	if r, c := static.FlowRates(Flow{GBR: 15 * mbit}, 0); r != 10*mbit || c != 30*mbit {
		t.Errorf("static FlowRates = %d/%d, want 10/30 Mbit/s", r, c)
	}
}

// TestAdmitGrownFlowDoesNotPushOut checks that a flow that holds a class
// and asks for more GBR is admitted after the flows that keep theirs: the
// unchanged flow stays, the grown one is refused.
func TestAdmitGrownFlowDoesNotPushOut(t *testing.T) {
	pol := DefaultPolicy(30 * mbit)
	a := Flow{ID: FlowID{SEID: 1, QERID: 1}, GBR: 20 * mbit, Mark: 1} // was 10
	b := Flow{ID: FlowID{SEID: 1, QERID: 2}, GBR: 15 * mbit, Mark: 2}
	adm := Admit([]Flow{a, b}, pol, func(f *Flow) int {
		if f.ID == a.ID {
			return AdmitGrown
		}
		return AdmitKept
	}, nil)
	if len(adm.Flows) != 1 || adm.Flows[0].ID != b.ID {
		t.Fatalf("admitted %v, want only the unchanged flow %s", adm.Flows, b.ID)
	}
}
