package shaper

import "fmt"

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
	// Class is the class's handle (ClassState.Handle), when the object has
	// one.
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
