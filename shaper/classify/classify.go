package classify

import (
	"context"

	"github.com/vishvananda/netlink"
)

// Env is what a Classifier works with: the backend's netlink handle, the
// device, and the handle of the root qdisc the classes hang under.
type Env struct {
	// Handle is the backend's long-lived netlink handle (maybe in a
	// netns). Classifiers must use it, never the package-level functions.
	Handle *netlink.Handle
	// Link is the device.
	Link netlink.Link
	// Root is the root qdisc's handle (major<<16).
	Root uint32
}

// Binding is one classification entry as a classifier reads it back.
type Binding struct {
	// Minor is the class the packets go to (under Env.Root).
	Minor uint16
	// Mark is the skb->mark matched (mark classifiers), else 0.
	Mark uint32
	// TEID and QFI are matched by (TEID, QFI) classifiers, else 0.
	TEID uint32
	QFI  uint8
}

// Result says what a Sync changed. Writes counts every netlink or BPF
// write (filter add/change/delete, map update/delete, program load); it is
// 0 when the classifier was already in sync.
type Result struct {
	// Added, Changed and Deleted count classification entries.
	Added, Changed, Deleted int
	// Writes counts kernel writes.
	Writes int
	// Notes are one-line remarks for output ("loaded cls_bpf program").
	Notes []string
}

// Add folds o into r.
func (r *Result) Add(o Result) {
	r.Added += o.Added
	r.Changed += o.Changed
	r.Deleted += o.Deleted
	r.Writes += o.Writes
	r.Notes = append(r.Notes, o.Notes...)
}

// Classifier steers each flow's packets into its class. Fw and MarkBPF
// classify by mark; package gtpu by (TEID, QFI).
//
// The backend calls Sync after it has created and changed classes and
// before it deletes classes, so a classifier may bind entries to every class
// of the table and must unbind anything pointing at classes not in it.
type Classifier interface {
	// Kind names the classifier for output and policy.
	Kind() Kind
	// Sync makes the device's classification match want: it adds what is
	// missing, changes what differs and removes what is stale, and only
	// what it owns. It must be idempotent: Writes is 0 when nothing
	// differed.
	Sync(ctx context.Context, env Env, want Table) (Result, error)
	// Bindings reads the classification entries back (so that a restarted
	// process can match kernel classes to flows).
	Bindings(ctx context.Context, env Env) ([]Binding, error)
	// Remove deletes everything this classifier installed on the device,
	// including objects outside the root qdisc (clsact filters), and
	// nothing it does not own.
	Remove(ctx context.Context, env Env) error
}

// Prober is implemented by classifiers that can tell whether the kernel
// supports them, without leaving anything behind.
type Prober interface {
	// Probe returns nil if the classifier works on env's device.
	Probe(ctx context.Context, env Env) error
}

// KeyNeeder is implemented by classifiers that can tell, before any
// write, whether an entry carries the key they bind by. Sync skips an
// entry without it (its packets reach the default class); a backend warns
// about it up front.
type KeyNeeder interface {
	// MissingKey returns the field the entry lacks ("mark", "teid"), or
	// "" when the classifier can bind it.
	MissingKey(e Entry) string
}

// FilterOwner is implemented by classifiers that install tc filters
// under the root qdisc: Owns says whether a filter read from the kernel is
// one of theirs. Every other filter under the root is foreign, and the
// backend removes it (everything under gtpqos's root is gtpqos's).
type FilterOwner interface {
	Owns(f netlink.Filter) bool
}

// DeltaSyncer is implemented by classifiers that can move their entries
// from one table to the next without reading the kernel back. A backend in
// incremental mode uses it between full runs; a classifier without it gets
// a full Sync every time.
type DeltaSyncer interface {
	// SyncDelta changes the entries from what from asked for to what to
	// asks for, trusting that the kernel holds exactly from's entries.
	// Stale entries are removed before new ones are added.
	SyncDelta(ctx context.Context, env Env, from, to Table) (Result, error)
}

// Patcher is implemented by classifiers that can remove and write single
// entries without reading the kernel back, trusting that it holds what
// they last wrote: a backend's incremental updates use it, so that a
// change costs writes for the changed entries only.
type Patcher interface {
	// Patch removes the entries of del (by their keys), then writes those
	// of put.
	Patch(ctx context.Context, env Env, del, put []Entry) (Result, error)
}

// WriteCounter is implemented by classifiers that count the writes their
// Remove made.
type WriteCounter interface {
	// TakeWrites returns the writes since the last call and resets the
	// count.
	TakeWrites() int
}

// RemoveCounted calls c.Remove and returns how many writes it made (1 when
// the classifier does not count).
func RemoveCounted(ctx context.Context, env Env, c Classifier) (int, error) {
	err := c.Remove(ctx, env)
	n := 1
	if wc, ok := c.(WriteCounter); ok {
		n = wc.TakeWrites()
	}
	return n, err
}

// markTable returns mark -> class id for the table's entries with a mark.
func markTable(t Table) map[uint32]uint32 {
	out := make(map[uint32]uint32, len(t.Entries))
	for _, e := range t.Entries {
		if e.Mark != 0 {
			out[e.Mark] = e.ClassID
		}
	}
	return out
}
