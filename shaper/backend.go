package shaper

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotOwned is returned (wrapped) when a device's root qdisc belongs to
// someone else and force is off: gtpqos changes nothing there.
var ErrNotOwned = errors.New("root qdisc not created by gtpqos")

// ErrFullApplyNeeded is returned (wrapped) by Backend.Update when the
// backend has no state to update (nothing applied yet, or a failure): the
// caller must Apply every flow.
var ErrFullApplyNeeded = errors.New("a full apply is needed")

// Backend enforces the QoS flows of one device in the kernel: it plans
// classes for the flows, makes the device hold them, and reads back what
// the device holds. The HTB backend (package shaper/htb) is the first;
// package shaper/backends opens one by name. The CLI and the watch engine
// reach the kernel only through this interface.
//
// A Backend owns only what it creates on its device and never touches
// anything else there. It is not safe for concurrent use unless it says so.
type Backend interface {
	// Name is the backend's kind ("htb").
	Name() string
	// Dev is the device.
	Dev() string
	// Apply plans flows under pol against what the device holds (so each
	// flow keeps its class) and makes the device enforce the plan with the
	// fewest writes; a second Apply of the same flows writes nothing.
	// Flows with an Error problem are left out, unless opt.Strict: then
	// such a problem fails Apply before anything is written.
	Apply(ctx context.Context, flows []Flow, pol Policy, opt ApplyOptions) (Report, error)
	// Update applies the flows of the given sessions (an empty list: the
	// session is gone) on top of what the last Apply or Update made true,
	// with work proportional to the change; the other sessions keep their
	// flows. Before a successful Apply, and after any failure, it returns
	// an error wrapping ErrFullApplyNeeded: the caller then calls Apply
	// with every flow. The report lists only what the update touched.
	Update(ctx context.Context, sessions map[uint64][]Flow, pol Policy) (Report, error)
	// Classes returns the classes the last successful Apply or Update
	// planned (flow classes carry their flow), for metrics.
	Classes() []ClassState
	// Inspect reads what the device enforces now: its classes, the key
	// (mark, TEID, QFI) that binds each flow class, and their counters. It
	// returns an Inspection with Owned false when the device holds no tree
	// of this backend, and an error wrapping ErrNotOwned when someone
	// else's tree is there.
	Inspect(ctx context.Context) (*Inspection, error)
	// Counters reads every owned class's counters by class handle.
	Counters(ctx context.Context) (map[string]Counters, error)
	// FlowCounters reads the counters of every flow class the last
	// successful Apply or Update planned, in one pass over the kernel's
	// classes and without holding up the backend's writes: what metrics
	// export at each scrape. Each class is reported at most once. Before
	// any apply it returns none; after a failed write (until an apply
	// succeeds) and after Close, an error.
	FlowCounters(ctx context.Context) ([]FlowCounters, error)
	// Reset removes everything the backend owns on the device, and only
	// that; it returns one line per thing removed (or one saying nothing
	// was).
	Reset(ctx context.Context) ([]string, error)
	// Resync makes the next Apply read the device back and repair any drift
	// instead of trusting what the last Apply made true.
	Resync()
	// Close releases the backend's kernel handles; the device keeps what it
	// holds.
	Close() error
}

// Prechecker is implemented by backends that can tell, before writing
// anything, whether the kernel can enforce a policy (the classifier and
// leaf kinds it names explicitly). Apply checks the same before its first
// write; a daemon calls Precheck to refuse at start rather than at its
// first reconcile.
type Prechecker interface {
	Precheck(ctx context.Context, pol Policy) error
}

// ApplyOptions tune one Apply.
type ApplyOptions struct {
	// Strict makes any Error problem of the plan fail Apply before the
	// first write (all or nothing, as `gtpqos apply` wants).
	Strict bool
	// NoClassList leaves Report.Classes empty: the daemon reads only what
	// changed, and at 65k classes the list is some 11 MB per apply.
	NoClassList bool
}

// Report says what one Apply did.
type Report struct {
	// Dev and Backend name the device and the backend.
	Dev, Backend string
	// Problems are the plan's problems (refused or adjusted flows).
	Problems []Problem
	// ProblemsSame says Problems are the list the device's previous Apply
	// or Update reported, unchanged (an Update that moved no problem sets
	// it, so a caller need not compare them per event; the slice may be
	// that same list: do not modify it).
	ProblemsSame bool
	// Changes list the class writes, one per class created, changed or
	// deleted, and one per classifier sync that changed entries.
	Changes []Change
	// Writes counts every kernel write; 0 means the device was in sync.
	Writes int
	// Summary is one line for output.
	Summary string
	// Notes are one-line remarks (auto-detection, fallbacks, force).
	Notes []string
	// Flows and ClassCount are how many flows and classes the device's
	// plan holds after the apply; Classes are the planned classes the
	// apply covered (all of them for Apply, the changed ones for Update;
	// flow classes carry their flow).
	Flows      int
	ClassCount int
	Classes    []ClassState
	// Accounting is the bytes the classes count; Overhead, under packet
	// accounting, the bytes of each frame they do not count (their byte
	// counters leave them out too).
	Accounting Accounting
	Overhead   uint32
}

// InSync reports whether Apply wrote nothing.
func (r Report) InSync() bool { return r.Writes == 0 }

// FlowClass returns the planned class of the flow with the given id.
func (r Report) FlowClass(id FlowID) (ClassState, bool) {
	for _, c := range r.Classes {
		if c.Role == RoleFlow && c.Flow == id {
			return c, true
		}
	}
	return ClassState{}, false
}

// Change is one write an Apply made.
type Change struct {
	// Op is "add", "change", "delete" or "sync".
	Op string
	// Object is what was written: "qdisc", "class", or a classifier kind.
	Object string
	// Class is the class handle ("6771:10"), when the object has one.
	Class string
	// Role is the class's role (flow, session, ...).
	Role Role
	// Flow identifies the flow the class serves (a session class: SEID
	// only); Name and QFI are the flow's.
	Flow FlowID
	Name string
	QFI  uint8
	// Rate and Ceil are the class's rates after the change (bit/s).
	Rate, Ceil uint64
	// Detail is a short description ("flow rate 15mbit ceil 18mbit").
	Detail string
}

// String formats the change for a log line.
func (c Change) String() string {
	s := c.Op + " " + c.Object
	if c.Class != "" {
		s += " " + c.Class
	}
	if c.Flow.QERID != 0 {
		s += fmt.Sprintf(" %s qfi=%d", c.Flow, c.QFI)
	} else if c.Flow.SEID != 0 {
		s += fmt.Sprintf(" seid=%d", c.Flow.SEID)
	}
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	return s
}

// Key is what a classifier binds a flow class by.
type Key struct {
	// Mark is the skb->mark (0: none).
	Mark uint32
	// TEID and QFI identify the flow's GTP-U packets (TEID 0: by QFI
	// alone, or none).
	TEID uint32
	QFI  uint8
}

// Counters are one class's kernel counters.
type Counters struct {
	// Bytes and Packets the class sent.
	Bytes, Packets uint64
	// Drops counts packets dropped at the class (its leaf queue full).
	Drops uint64
	// Overlimits counts times the class was over its rate or ceil.
	Overlimits uint64
	// Backlog and Qlen are bytes and packets queued now.
	Backlog, Qlen uint64
}

// FlowCounters are one flow class's counters with what names the class.
type FlowCounters struct {
	Flow FlowID
	// Class is the class id (major<<16 | minor).
	Class uint32
	// QFI is the flow's QoS Flow Identifier.
	QFI uint8
	Counters
}

// ClassState is one class as a plan or the kernel has it.
type ClassState struct {
	// Handle is the class id as tc writes it ("6771:10").
	Handle string
	// Parent is the parent class's handle ("" under the root).
	Parent string
	// Role is what the class is for.
	Role Role
	// Flow, Name, GBR and MBR are the flow's (planned classes only: the
	// kernel does not know flow ids).
	Flow     FlowID
	Name     string
	GBR, MBR uint64
	// SEID is a session class's session (planned classes only).
	SEID uint64
	// Key is what binds the class's packets (flow classes).
	Key Key
	// Rate and Ceil are the class's rates (bit/s).
	Rate, Ceil uint64
	// Counters are the class's counters (Inspect only).
	Counters Counters
}

// Inspection is what a device enforces now, as a backend reads it.
type Inspection struct {
	// Dev and Backend name the device and the backend.
	Dev, Backend string
	// Owned is true when the device holds this backend's tree; Root is
	// the tree's root as tc writes it ("6771:").
	Owned bool
	Root  string
	// Classifier and Leaf are the classifier and leaf kinds in use.
	Classifier ClassifierKind
	Leaf       LeafKind
	// Accounting is the bytes the classes count, as the kernel's tree says
	// (a size table on the root: packet); Overhead the bytes of each frame
	// they leave out (packet accounting). Class counters count the same
	// bytes.
	Accounting Accounting
	Overhead   uint32
	// Default is the handle of the class unclassified packets go to.
	Default string
	// Classes are the tree's classes with their keys and counters.
	Classes []ClassState
	// Attachments are classifier programs outside the tree (GTP-U
	// programs on clsact hooks).
	Attachments []Attachment
	// Unplaced counts packets the classifier saw but could bind to no flow
	// class (nil when it cannot tell: then the default class's counters
	// are the signal).
	Unplaced *uint64
	// Problems are inconsistencies found while reading (a classifier
	// entry pointing at a class that does not exist).
	Problems []string
}

// FlowClasses returns the flow classes.
func (in *Inspection) FlowClasses() []ClassState {
	var out []ClassState
	for _, c := range in.Classes {
		if c.Role == RoleFlow {
			out = append(out, c)
		}
	}
	return out
}

// Class returns the class with the given handle.
func (in *Inspection) Class(handle string) (ClassState, bool) {
	for _, c := range in.Classes {
		if c.Handle == handle {
			return c, true
		}
	}
	return ClassState{}, false
}

// Attachment is one classifier program attached outside the tree.
type Attachment struct {
	// Dev and Hook say where ("egress", "ingress").
	Dev  string `json:"dev"`
	Hook string `json:"hook"`
	// Name is the filter's name; ProgramID the kernel's program id.
	Name      string `json:"filter"`
	ProgramID uint32 `json:"program_id"`
	// Entries counts the entries of the map the program looks up.
	Entries int `json:"entries"`
	// Counters are the program's packet counters by name ("hit", "miss",
	// ...), nil when it counts nothing.
	Counters map[string]uint64 `json:"counters,omitempty"`
}
