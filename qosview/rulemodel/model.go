package rulemodel

import (
	"slices"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
)

// session is one PFCP session's rules (rules.go). A session has a handful
// of rules, so slices searched by id hold them: a map's first bucket alone
// takes eight rules' room (two kilobytes a session, tens of megabytes at
// 65k sessions).
type session struct {
	qers []qer
	pdrs []pdr
	fars []far
}

func (s *session) empty() bool { return len(s.qers) == 0 && len(s.pdrs) == 0 && len(s.fars) == 0 }

// lists returns the session's rules in gtp5g's form, for the QoS view.
func (s *session) lists(seid uint64) ([]gtp5g.QER, []gtp5g.PDR, []gtp5g.FAR) {
	qers := make([]gtp5g.QER, len(s.qers))
	for i := range s.qers {
		qers[i] = s.qers[i].rule(seid)
	}
	pdrs := make([]gtp5g.PDR, len(s.pdrs))
	for i := range s.pdrs {
		pdrs[i] = s.pdrs[i].rule(seid)
	}
	fars := make([]gtp5g.FAR, len(s.fars))
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

func qerID(q *qer) uint32 { return q.id }
func pdrID(p *pdr) uint16 { return p.id }
func farID(f *far) uint32 { return f.id }

// Model is gtp5g's rules by session: a full dump sets it, rule changes
// update it one rule at a time. Rules of several gtp5g devices in one
// network namespace are keyed by (SEID, id) alone, as gtp5g's dumps do not
// say which device holds a rule. It is not safe for concurrent use.
type Model struct {
	sessions map[uint64]*session
}

// New returns the model of a full dump (nil lists: an empty model).
func New(qers []gtp5g.QER, pdrs []gtp5g.PDR, fars []gtp5g.FAR) *Model {
	m := &Model{sessions: map[uint64]*session{}}
	for i := range qers {
		m.SetQER(&qers[i])
	}
	for i := range pdrs {
		m.SetPDR(&pdrs[i])
	}
	for i := range fars {
		m.SetFAR(&fars[i])
	}
	return m
}

func (m *Model) session(seid uint64) *session {
	s := m.sessions[seid]
	if s == nil {
		s = &session{}
		m.sessions[seid] = s
	}
	return s
}

// SetQER adds q, or replaces the QER of its session with its id.
func (m *Model) SetQER(q *gtp5g.QER) {
	s := m.session(q.SEID)
	s.qers = setRule(s.qers, qerForView(q), qerID)
}

// SetPDR adds p, or replaces the PDR of its session with its id.
func (m *Model) SetPDR(p *gtp5g.PDR) {
	s := m.session(p.SEID)
	s.pdrs = setRule(s.pdrs, pdrForView(p), pdrID)
}

// SetFAR adds f, or replaces the FAR of its session with its id.
func (m *Model) SetFAR(f *gtp5g.FAR) {
	s := m.session(f.SEID)
	s.fars = setRule(s.fars, farForView(f), farID)
}

// DeleteQER removes session seid's QER id; a session left without rules
// leaves the model.
func (m *Model) DeleteQER(seid uint64, id uint32) {
	m.delete(seid, func(s *session) { s.qers = deleteRule(s.qers, id, qerID) })
}

// DeletePDR removes session seid's PDR id, as DeleteQER.
func (m *Model) DeletePDR(seid uint64, id uint16) {
	m.delete(seid, func(s *session) { s.pdrs = deleteRule(s.pdrs, id, pdrID) })
}

// DeleteFAR removes session seid's FAR id, as DeleteQER.
func (m *Model) DeleteFAR(seid uint64, id uint32) {
	m.delete(seid, func(s *session) { s.fars = deleteRule(s.fars, id, farID) })
}

func (m *Model) delete(seid uint64, del func(*session)) {
	s := m.sessions[seid]
	if s == nil {
		return
	}
	del(s)
	if s.empty() {
		delete(m.sessions, seid)
	}
}

// Has reports whether session seid has rules in the model.
func (m *Model) Has(seid uint64) bool { return m.sessions[seid] != nil }

// Rules returns one session's rules (none for an unknown session).
func (m *Model) Rules(seid uint64) ([]gtp5g.QER, []gtp5g.PDR, []gtp5g.FAR) {
	s := m.sessions[seid]
	if s == nil {
		return nil, nil, nil
	}
	return s.lists(seid)
}
