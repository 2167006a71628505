package shaper

import (
	"fmt"

	"github.com/free5gc/gtpqos/internal/enum"
)

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

var problemKinds = enum.Table[ProblemKind]{What: "problem", Names: []enum.Name[ProblemKind]{
	{Value: MBRBelowGBR, Name: "mbr-below-gbr"},
	{Value: GBRAboveLink, Name: "gbr-above-link"},
	{Value: GBRSumAboveLink, Name: "gbr-sum-above-link"},
	{Value: DuplicateFlow, Name: "duplicate-flow"},
	{Value: DuplicateMark, Name: "duplicate-mark"},
	{Value: TooManyFlows, Name: "too-many-flows"},
	{Value: BadRate, Name: "bad-rate"},
	{Value: BadQFI, Name: "bad-qfi"},
	{Value: AMBRConflict, Name: "ambr-conflict"},
	{Value: Oversubscribed, Name: "oversubscribed"},
	{Value: Clamped, Name: "clamped"},
	{Value: BadPolicy, Name: "bad-policy"},
	{Value: DuplicateTEID, Name: "duplicate-teid"},
	{Value: BadMark, Name: "bad-mark"},
	{Value: Unreachable, Name: "unreachable"},
	{Value: DeviceDown, Name: "device-down"},
}}

// String names the kind.
func (k ProblemKind) String() string { return problemKinds.String(k) }

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
