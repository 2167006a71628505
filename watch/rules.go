package watch

import (
	"slices"

	"github.com/free5gc/gtpqos/gtpnl"
)

// sessionRules are one PFCP session's rules, as the QoS view reads them
// (rules_view.go). A session has a handful of rules, so slices searched by
// id hold them: a map's first bucket alone takes eight rules' room (two
// kilobytes a session, tens of megabytes at 65k sessions).
type sessionRules struct {
	qers []viewQER
	pdrs []viewPDR
	fars []viewFAR
}

func (s *sessionRules) empty() bool { return len(s.qers) == 0 && len(s.pdrs) == 0 && len(s.fars) == 0 }

// lists returns the session's rules in gtpnl's form, for the QoS view.
func (s *sessionRules) lists(seid uint64) ([]gtpnl.QER, []gtpnl.PDR, []gtpnl.FAR) {
	qers := make([]gtpnl.QER, len(s.qers))
	for i := range s.qers {
		qers[i] = s.qers[i].rule(seid)
	}
	pdrs := make([]gtpnl.PDR, len(s.pdrs))
	for i := range s.pdrs {
		pdrs[i] = s.pdrs[i].rule(seid)
	}
	fars := make([]gtpnl.FAR, len(s.fars))
	for i := range s.fars {
		fars[i] = s.fars[i].rule(seid)
	}
	return qers, pdrs, fars
}

// setRule replaces the rule with r's id, or appends r.
func setRule[T any, ID comparable](rules []T, r T, id func(*T) ID) []T {
	want := id(&r)
	for i := range rules {
		if id(&rules[i]) == want {
			rules[i] = r
			return rules
		}
	}
	return append(rules, r)
}

// deleteRule removes the rule with id want.
func deleteRule[T any, ID comparable](rules []T, want ID, id func(*T) ID) []T {
	return slices.DeleteFunc(rules, func(r T) bool { return id(&r) == want })
}

func qerID(q *viewQER) uint32 { return q.id }
func pdrID(p *viewPDR) uint16 { return p.id }
func farID(f *viewFAR) uint32 { return f.id }

// ruleModel is gtp5g's rules by session: a full dump sets it, change events
// update it one rule at a time. Rules of several gtp5g devices in one
// network namespace are keyed by (SEID, id) alone, as gtp5g's dumps do not
// say which device holds a rule.
type ruleModel struct {
	sessions map[uint64]*sessionRules
}

// newRuleModel returns the model of a full dump.
func newRuleModel(qers []gtpnl.QER, pdrs []gtpnl.PDR, fars []gtpnl.FAR) *ruleModel {
	m := &ruleModel{sessions: map[uint64]*sessionRules{}}
	for i := range qers {
		s := m.session(qers[i].SEID)
		s.qers = setRule(s.qers, qerForView(&qers[i]), qerID)
	}
	for i := range pdrs {
		s := m.session(pdrs[i].SEID)
		s.pdrs = setRule(s.pdrs, pdrForView(&pdrs[i]), pdrID)
	}
	for i := range fars {
		s := m.session(fars[i].SEID)
		s.fars = setRule(s.fars, farForView(&fars[i]), farID)
	}
	return m
}

func (m *ruleModel) session(seid uint64) *sessionRules {
	s := m.sessions[seid]
	if s == nil {
		s = &sessionRules{}
		m.sessions[seid] = s
	}
	return s
}

// apply folds one event in: an add or update sets the rule's state, a
// delete removes it. It returns the session the rule belongs to.
func (m *ruleModel) apply(ev gtpnl.Event) uint64 {
	seid := eventSEID(ev)
	s := m.session(seid)
	del := ev.Op == gtpnl.EventDelete
	switch {
	case ev.QER != nil && del:
		s.qers = deleteRule(s.qers, ev.QER.ID, qerID)
	case ev.QER != nil:
		s.qers = setRule(s.qers, qerForView(ev.QER), qerID)
	case ev.PDR != nil && del:
		s.pdrs = deleteRule(s.pdrs, ev.PDR.ID, pdrID)
	case ev.PDR != nil:
		s.pdrs = setRule(s.pdrs, pdrForView(ev.PDR), pdrID)
	case ev.FAR != nil && del:
		s.fars = deleteRule(s.fars, ev.FAR.ID, farID)
	case ev.FAR != nil:
		s.fars = setRule(s.fars, farForView(ev.FAR), farID)
	}
	if s.empty() {
		delete(m.sessions, seid)
	}
	return seid
}

// rules returns one session's rules (none for an unknown session).
func (m *ruleModel) rules(seid uint64) ([]gtpnl.QER, []gtpnl.PDR, []gtpnl.FAR) {
	s := m.sessions[seid]
	if s == nil {
		return nil, nil, nil
	}
	return s.lists(seid)
}
