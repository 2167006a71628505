package shaper

import (
	"context"

	"github.com/vishvananda/netlink"
)

// ClassifierEnv is what a Classifier works with: the Reconciler's netlink
// handle, the device, and the handle of the root HTB qdisc gtpqos owns.
type ClassifierEnv struct {
	// Handle is the Reconciler's long-lived netlink handle (maybe in a
	// netns). Classifiers must use it, never the package-level functions.
	Handle *netlink.Handle
	// Link is the device.
	Link netlink.Link
	// Root is the root HTB qdisc's handle (OwnedMajor<<16).
	Root uint32
}

// Binding is one classification entry as a classifier reads it back: which
// packets (mark, or TEID+QFI) go to which class.
type Binding struct {
	// Minor is the class the packets go to.
	Minor uint16
	// Mark is the skb->mark matched (mark classifiers), else 0.
	Mark uint32
	// TEID and QFI are matched by (TEID, QFI) classifiers, else 0.
	TEID uint32
	// QFI is matched by (TEID, QFI) classifiers.
	QFI uint8
}

// ClassifierResult says what a Sync changed. Writes counts every netlink or
// BPF write (filter add/change/delete, map update/delete, program load); it
// is 0 when the classifier was already in sync.
type ClassifierResult struct {
	// Added, Changed and Deleted count classification entries.
	Added, Changed, Deleted int
	// Writes counts kernel writes.
	Writes int
	// Notes are one-line remarks for output ("loaded cls_bpf program").
	Notes []string
}

// Classifier steers each flow's packets into its class. The shaper package
// implements FwClassifier and MarkBPFClassifier; other packages (for example
// shaper/classify/gtpu, keyed by TEID+QFI) implement it without the shaper
// importing them, and are passed to NewReconciler with WithClassifier.
//
// The Reconciler calls Sync after it has created and changed classes and
// before it deletes classes, so a classifier may bind entries to every class
// of desired and must unbind anything pointing at classes not in desired.
// Entries whose key a flow lacks (no mark for a mark classifier) are
// skipped: such packets reach the default class.
type Classifier interface {
	// Kind names the classifier for output ("fw", "bpf", "gtpu-bpf").
	Kind() ClassifierKind
	// Sync makes the device's classification match desired's flow
	// classes: it adds what is missing, changes what differs and removes
	// what is stale, and only what it owns. It must be idempotent: Writes
	// is 0 when nothing differed.
	Sync(ctx context.Context, env ClassifierEnv, desired *Tree) (ClassifierResult, error)
	// Bindings reads the classification entries back (for Actual, so that
	// Plan can match kernel classes to flows after a restart).
	Bindings(ctx context.Context, env ClassifierEnv) ([]Binding, error)
	// Remove deletes everything this classifier installed on the device,
	// including objects outside the root qdisc (clsact filters). Objects
	// under the root qdisc also vanish when Reset deletes it.
	Remove(ctx context.Context, env ClassifierEnv) error
}

// Prober is implemented by classifiers that can tell whether the kernel
// supports them; KindAuto picks the first classifier whose Probe succeeds.
type Prober interface {
	// Probe returns nil if the classifier works on env's device.
	Probe(ctx context.Context, env ClassifierEnv) error
}
