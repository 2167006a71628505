package shaper

import (
	"context"
	"errors"
)

// ErrNotOwned is returned (wrapped) when a device's root qdisc belongs to
// someone else and force is off: gtpqos changes nothing there.
var ErrNotOwned = errors.New("root qdisc not created by gtpqos")

// ErrFullApplyNeeded is returned (wrapped) by Backend.Update when the
// backend has no state to update (nothing applied yet, or a failure): the
// caller must Apply every flow.
var ErrFullApplyNeeded = errors.New("a full apply is needed")

// Backend enforces the QoS flows of one device in the kernel: it plans
// classes for the flows, makes the device hold them (Writer), and reads
// back what the device holds (Reader). The HTB backend (package
// shaper/htb) is the first; package shaper/backends opens one by name. The
// CLI and the watch engine reach the kernel only through these interfaces;
// a consumer that only reads takes a Reader.
//
// A Backend owns only what it creates on its device and never touches
// anything else there. It is not safe for concurrent use unless it says so.
type Backend interface {
	Writer
	Reader
}

// Named says which backend serves which device.
type Named interface {
	// Name is the backend's kind ("htb").
	Name() string
	// Dev is the device.
	Dev() string
}

// Writer is the half of a Backend that changes the device.
type Writer interface {
	Named
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

// Reader is the half of a Backend that reads the device and the plan.
type Reader interface {
	Named
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
}

// Prechecker is implemented by backends that can tell, before writing
// anything, whether the kernel can enforce a policy (the classifier and
// leaf kinds it names explicitly). Apply checks the same before its first
// write; a daemon calls Precheck to refuse at start rather than at its
// first reconcile.
type Prechecker interface {
	Precheck(ctx context.Context, pol Policy) error
}
