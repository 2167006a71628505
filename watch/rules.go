package watch

import (
	"github.com/free5gc/gtpqos/gtpnl"
)

// sessionRules are one PFCP session's rules as gtp5g holds them.
type sessionRules struct {
	qers map[uint32]gtpnl.QER
	pdrs map[uint16]gtpnl.PDR
	fars map[uint32]gtpnl.FAR
}

func newSessionRules() *sessionRules {
	return &sessionRules{qers: map[uint32]gtpnl.QER{}, pdrs: map[uint16]gtpnl.PDR{}, fars: map[uint32]gtpnl.FAR{}}
}

func (s *sessionRules) empty() bool { return len(s.qers) == 0 && len(s.pdrs) == 0 && len(s.fars) == 0 }

// lists returns the session's rules as the slices the QoS view takes.
func (s *sessionRules) lists() ([]gtpnl.QER, []gtpnl.PDR, []gtpnl.FAR) {
	qers := make([]gtpnl.QER, 0, len(s.qers))
	for _, q := range s.qers {
		qers = append(qers, q)
	}
	pdrs := make([]gtpnl.PDR, 0, len(s.pdrs))
	for _, p := range s.pdrs {
		pdrs = append(pdrs, p)
	}
	fars := make([]gtpnl.FAR, 0, len(s.fars))
	for _, f := range s.fars {
		fars = append(fars, f)
	}
	return qers, pdrs, fars
}

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
	for _, q := range qers {
		m.session(q.SEID).qers[q.ID] = q
	}
	for _, p := range pdrs {
		m.session(p.SEID).pdrs[p.ID] = p
	}
	for _, f := range fars {
		m.session(f.SEID).fars[f.ID] = f
	}
	return m
}

func (m *ruleModel) session(seid uint64) *sessionRules {
	s := m.sessions[seid]
	if s == nil {
		s = newSessionRules()
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
		delete(s.qers, ev.QER.ID)
	case ev.QER != nil:
		s.qers[ev.QER.ID] = *ev.QER
	case ev.PDR != nil && del:
		delete(s.pdrs, ev.PDR.ID)
	case ev.PDR != nil:
		s.pdrs[ev.PDR.ID] = *ev.PDR
	case ev.FAR != nil && del:
		delete(s.fars, ev.FAR.ID)
	case ev.FAR != nil:
		s.fars[ev.FAR.ID] = *ev.FAR
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
	return s.lists()
}
