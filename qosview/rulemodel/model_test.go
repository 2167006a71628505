package rulemodel

import (
	"testing"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
)

// TestModelChangesOneRuleAtATime checks what the event path relies on: a
// rule set again under its id replaces it, a delete removes it alone, a
// session's last rule takes the session with it, and a delete of a rule
// or session the model lacks changes nothing.
func TestModelChangesOneRuleAtATime(t *testing.T) {
	m := New([]gtp5g.QER{{SEID: 1, ID: 1, QFI: 9}, {SEID: 2, ID: 1}},
		[]gtp5g.PDR{{SEID: 1, ID: 1, FARID: 1, QERIDs: []uint32{1}}}, []gtp5g.FAR{{SEID: 1, ID: 1}})
	m.SetQER(&gtp5g.QER{SEID: 1, ID: 1, QFI: 5})
	m.SetQER(&gtp5g.QER{SEID: 1, ID: 2, QFI: 6})
	qers, pdrs, fars := m.Rules(1)
	if len(qers) != 2 || qers[0].QFI != 5 || qers[1].QFI != 6 || len(pdrs) != 1 || len(fars) != 1 {
		t.Fatalf("session 1 after replacing QER 1 and adding QER 2: %+v %+v %+v", qers, pdrs, fars)
	}
	m.DeletePDR(1, 1)
	m.DeleteFAR(1, 7) // not there
	m.DeleteQER(9, 1) // no such session
	if qers, pdrs, fars := m.Rules(1); len(qers) != 2 || len(pdrs) != 0 || len(fars) != 1 {
		t.Fatalf("session 1 after deleting its PDR: %+v %+v %+v", qers, pdrs, fars)
	}
	if m.Has(9) {
		t.Error("a delete in an unknown session left that session in the model")
	}
	m.DeleteQER(2, 1)
	if m.Has(2) {
		t.Error("session 2 kept after its last rule was deleted")
	}
	if qers, _, _ := m.Rules(2); qers != nil {
		t.Errorf("rules of a deleted session: %+v", qers)
	}
}
