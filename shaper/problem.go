package shaper

import "fmt"

// ProblemKind says what is wrong.
type ProblemKind uint8

const (
	// MBRBelowGBR: the flow's MBR is below its GBR.
	MBRBelowGBR ProblemKind = iota + 1
	// GBRAboveLink: one flow's GBR is above the link rate.
	GBRAboveLink
	// GBRSumAboveLink: admitting the flow would make the sum of GBRs exceed
	// the link rate (admission).
	GBRSumAboveLink
	// DuplicateFlow: two flows share one FlowID.
	DuplicateFlow
	// DuplicateMark: two flows share one non-zero mark.
	DuplicateMark
	// TooManyFlows: no class id is left (16-bit minors).
	TooManyFlows
	// BadRate: a rate is zero where one is required, or absurd.
	BadRate
	// BadQFI: the QFI is above 63.
	BadQFI
	// AMBRConflict: flows of one session disagree on the session AMBR.
	AMBRConflict
	// Oversubscribed: the classes' rates (non-GBR minimums, default class,
	// static rates) add up to more than the link, so not all are guaranteed.
	Oversubscribed
	// Clamped: a value was reduced to fit (admission Clamp, quantum raised).
	Clamped
	// BadPolicy: the policy itself is unusable (link rate zero, ...).
	BadPolicy
	// DuplicateTEID: two flows share one non-zero (TEID, QFI), the key
	// stock gtp5g's packets are classified by.
	DuplicateTEID
	// BadMark: the flow's mark has bits outside MarkMask (the gtp5g patch's
	// 24-bit QoS mark field).
	BadMark
	// Unreachable: the flow lacks the key its device's classifier binds by
	// (a mark for the mark classifiers, a TEID for the GTP-U one): it gets
	// its class, and its GBR stays reserved, but no packet reaches it.
	Unreachable
	// DeviceDown: the device is down; its tree is installed and shapes
	// once the device comes up (an operator may pre-provision).
	DeviceDown
)

// String names the kind.
func (k ProblemKind) String() string {
	switch k {
	case MBRBelowGBR:
		return "mbr-below-gbr"
	case GBRAboveLink:
		return "gbr-above-link"
	case GBRSumAboveLink:
		return "gbr-sum-above-link"
	case DuplicateFlow:
		return "duplicate-flow"
	case DuplicateMark:
		return "duplicate-mark"
	case TooManyFlows:
		return "too-many-flows"
	case BadRate:
		return "bad-rate"
	case BadQFI:
		return "bad-qfi"
	case AMBRConflict:
		return "ambr-conflict"
	case Oversubscribed:
		return "oversubscribed"
	case Clamped:
		return "clamped"
	case BadPolicy:
		return "bad-policy"
	case DuplicateTEID:
		return "duplicate-teid"
	case BadMark:
		return "bad-mark"
	case Unreachable:
		return "unreachable"
	case DeviceDown:
		return "device-down"
	}
	return fmt.Sprintf("problem(%d)", uint8(k))
}

// Severity says whether a problem kept something out of the tree.
type Severity uint8

const (
	// Warning: the tree is usable and includes the flow (maybe adjusted).
	Warning Severity = iota + 1
	// Error: the flow (or, with an empty Flow, the whole plan) was left out.
	Error
)

// String returns "warning" or "error".
func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// Problem is one thing wrong with the input, naming the flow and field.
type Problem struct {
	// Kind is what is wrong.
	Kind ProblemKind
	// Severity says whether the flow was left out.
	Severity Severity
	// Flow is the flow at fault (zero for policy-level problems).
	Flow FlowID
	// Name is the flow's label ("flow A (seid=1 qer=1)"), or "policy".
	Name string
	// Field is the field at fault: "gbr", "mbr", "qfi", "mark", "teid", "id",
	// "session_ambr", "link", ...
	Field string
	// Detail says what is wrong in words.
	Detail string
}

// Error formats the problem as one line: "flow A (seid=1 qer=1): mbr: ...".
func (p Problem) Error() string { return fmt.Sprintf("%s: %s: %s", p.Name, p.Field, p.Detail) }

// String is Error prefixed with the severity.
func (p Problem) String() string { return p.Severity.String() + ": " + p.Error() }

// FirstError returns the first Error-severity problem, if any.
func FirstError(ps []Problem) (Problem, bool) {
	for _, p := range ps {
		if p.Severity == Error {
			return p, true
		}
	}
	return Problem{}, false
}
