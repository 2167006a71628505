package shaper

import (
	"time"

	"github.com/free5gc/gtpqos/internal/enum"
)

// Mode selects how flow classes get their rates.
type Mode uint8

const (
	// Aware translates each flow's contract: rate = GBR (or the non-GBR
	// minimum), ceil = MBR (or the link rate).
	Aware Mode = iota
	// Static is a QoS-unaware baseline for comparisons (`gtpqos ab`):
	// every flow class gets Policy.StaticRate / Policy.StaticCeil whatever
	// its contract. Flows keep their contracts (callers judge compliance
	// against them).
	Static
)

var modes = enum.Table[Mode]{What: "mode", Empty: "aware", Names: []enum.Name[Mode]{
	{Value: Aware, Name: "aware"},
	{Value: Static, Name: "static"},
}}

// String returns "aware" or "static".
func (m Mode) String() string { return modes.String(m) }

// ParseMode parses "aware" or "static" ("" is aware).
func ParseMode(s string) (Mode, error) { return modes.Parse(s) }

// Admission says what Plan does with a GBR flow whose guarantee does not fit
// in the link (sum of GBRs above the link rate, or GBR above the link).
type Admission uint8

const (
	// Refuse leaves the flow out of the tree and reports an error Problem.
	// Flows that hold a class already are admitted first, so a new flow can
	// never push out an admitted one.
	Refuse Admission = iota
	// Clamp admits the flow with its GBR reduced to what is left of the link
	// and reports a warning Problem. If what is left is below NonGBRMin the
	// flow is refused as with Refuse: a clamped GBR is at least the non-GBR
	// minimum.
	Clamp
)

var admissions = enum.Table[Admission]{What: "admission", Empty: "refuse", Names: []enum.Name[Admission]{
	{Value: Refuse, Name: "refuse"},
	{Value: Clamp, Name: "clamp"},
}}

// String returns "refuse" or "clamp".
func (a Admission) String() string { return admissions.String(a) }

// ParseAdmission parses "refuse" or "clamp" ("" is refuse).
func ParseAdmission(s string) (Admission, error) { return admissions.Parse(s) }

// Policy holds everything besides the flows that shapes the plan: the
// contract-level settings every backend honours, and each backend's own
// knobs (BackendKnobs), which only that backend reads.
//
// All rates are bit/s; sizes are bytes.
type Policy struct {
	// Backend names the backend that enforces the plan ("" is the
	// default, htb).
	Backend string
	// LinkRate is the bottleneck rate: the link class's rate and ceil, and
	// the ceil of flows without an MBR. Required.
	LinkRate uint64
	// Mode is Aware (translate contracts) or Static (fixed rate/ceil).
	Mode Mode
	// StaticRate and StaticCeil are every flow class's rate and ceil in
	// Static mode (default 10 and 30 Mbit/s: an equal share of a 30 Mbit/s
	// link for three flows). StaticCeil is capped at LinkRate.
	StaticRate, StaticCeil uint64
	// NonGBRMin is the rate of a non-GBR flow's class: an operator choice,
	// not a 3GPP guarantee (default 1 Mbit/s, so a best-effort flow is
	// never starved).
	NonGBRMin uint64
	// DefaultRate is the rate of the default class that takes unclassified
	// packets (default: NonGBRMin). Its ceil is the link rate.
	DefaultRate uint64
	// Admission decides what happens to a GBR flow that does not fit.
	Admission Admission
	// Accounting says which bytes the classes count: the user's packets
	// (default) or whole frames.
	Accounting Accounting
	// Overhead is, for packet accounting, the bytes a frame at the qdisc
	// carries besides the user's packet: auto (the backend derives it from
	// the device and the direction) or fixed.
	Overhead Overhead
	// DelayBudget is how long a flow's packet may wait in the shaper's
	// queue (default 20 ms): HTB sizes a FIFO leaf to its class's ceil ×
	// budget, edt drops a packet due further ahead. DelayBudgets are the
	// QFIs' own budgets (0: this default); BudgetOf picks a flow's.
	DelayBudget  time.Duration
	DelayBudgets QFIBudgets
	// BackendKnobs are each backend's own settings (an HTB class's burst
	// and quantum, its classifier and leaf qdisc, ...), by backend name,
	// uninterpreted here: the backend decodes them from the policy file's
	// section under its name.
	BackendKnobs KnobSet
}

// Defaults of DefaultPolicy (the Policy fields say why).
const (
	// DefaultNonGBRMin is the rate of a non-GBR flow's class, 1 Mbit/s.
	DefaultNonGBRMin = 1_000_000
	// DefaultStaticRate is every class's rate in static mode, 10 Mbit/s.
	DefaultStaticRate = 10_000_000
	// DefaultStaticCeil is every class's ceil in static mode, 30 Mbit/s.
	DefaultStaticCeil = 30_000_000
	// MaxRate is the largest rate Plan accepts (10 Tbit/s); above is absurd.
	MaxRate = 10_000_000_000_000
	// MinRate is the smallest non-zero rate Plan accepts (8 bit/s: a
	// kernel stores rates as bytes/s).
	MinRate = 8
)

// DefaultPolicy returns the default policy for a link of linkRate bit/s:
// aware mode, non-GBR minimum 1 Mbit/s, admission Refuse, static
// rate/ceil 10/30 Mbit/s, packet accounting with the overhead derived
// from the device, a 20 ms delay budget for every QFI, and no backend
// knobs (each backend's defaults).
func DefaultPolicy(linkRate uint64) Policy {
	return Policy{
		LinkRate:    linkRate,
		Mode:        Aware,
		StaticRate:  DefaultStaticRate,
		StaticCeil:  DefaultStaticCeil,
		NonGBRMin:   DefaultNonGBRMin,
		DefaultRate: DefaultNonGBRMin,
		Admission:   Refuse,
		Accounting:  AccountPacket,
		DelayBudget: DefaultDelayBudget,
	}
}
