package qosview

import "fmt"

// ProblemKind says what is wrong with a rule set.
type ProblemKind uint8

const (
	// DanglingQER: a PDR references a QER id its session does not have.
	DanglingQER ProblemKind = iota + 1
	// DanglingFAR: a downlink PDR references a FAR its session does not
	// have (or none), so the flow's GTP-U TEID is unknown.
	DanglingFAR
	// AmbiguousQER: a PDR references more than one rate-bearing QER that is
	// not a recognised session-AMBR QER, so the flow's contract is unclear.
	AmbiguousQER
	// UnknownInterface: a PDR's source interface is neither access nor core.
	UnknownInterface
	// WireQFI: gtp5g writes another QFI into the PDR's packets than the
	// flow QER's (it takes the first QER with a QFI, e.g. a session-AMBR
	// QER listed first): a QFI or mark classifier sees the other flow.
	WireQFI
	// NoMark: mark mode "flow" but gtp5g reports no flow mark for the PDR.
	NoMark
	// Conflict: PDRs of one flow disagree on its TEID or mark.
	Conflict
	// DuplicateRule: two rules share one (SEID, id) (e.g. on two devices).
	DuplicateRule
	// SharedMark: two flows of one direction carry one mark, so the
	// shaper cannot tell their packets apart: both are enforced in the
	// class of the first (e.g. mark mode flow with free5GC's non-GBR
	// flows, or mark mode qfi with two sessions using one QFI).
	SharedMark
)

// String names the kind.
func (k ProblemKind) String() string {
	switch k {
	case DanglingQER:
		return "dangling-qer"
	case DanglingFAR:
		return "dangling-far"
	case AmbiguousQER:
		return "ambiguous-qer"
	case UnknownInterface:
		return "unknown-interface"
	case WireQFI:
		return "wire-qfi"
	case NoMark:
		return "no-mark"
	case Conflict:
		return "conflict"
	case DuplicateRule:
		return "duplicate-rule"
	case SharedMark:
		return "shared-mark"
	default:
		if n, ok := sdfKindName(k); ok {
			return n
		}
		return fmt.Sprintf("problem(%d)", uint8(k))
	}
}

// Problem is one thing in the rule set that Build could not map cleanly.
// It names the session and rule at fault; Build never guesses past it.
type Problem struct {
	Kind ProblemKind
	// SEID is the session.
	SEID uint64
	// PDR is the PDR at fault (0 if none).
	PDR uint16
	// QER is the QER concerned (0 if none).
	QER uint32
	// Detail says what exactly is wrong.
	Detail string
}

// String formats the problem as "kind seid=S pdr=P qer=Q: detail".
func (p Problem) String() string {
	s := fmt.Sprintf("%s seid=%d", p.Kind, p.SEID)
	if p.PDR != 0 {
		s += fmt.Sprintf(" pdr=%d", p.PDR)
	}
	if p.QER != 0 {
		s += fmt.Sprintf(" qer=%d", p.QER)
	}
	return s + ": " + p.Detail
}
