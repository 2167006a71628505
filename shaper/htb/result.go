package htb

import (
	"fmt"
	"strings"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// Result says what one Reconcile changed.
type Result struct {
	// Dev is the device.
	Dev string
	// CreatedRoot is true when the root qdisc was created by this run;
	// Adopted is true when an existing gtpqos tree was found and kept.
	CreatedRoot, Adopted bool
	// Incremental is true when the run trusted the memory of the last
	// successful run instead of reading the device (Options.Incremental).
	Incremental bool
	// Created, Changed and Deleted list class minors.
	Created, Changed, Deleted []uint16
	// Leaves lists the minors whose leaf qdisc was created or replaced.
	Leaves []uint16
	// Classifier is the classifier's part.
	Classifier classify.Result
	// ClassifierKind is the classifier in use (after auto-detection).
	ClassifierKind classify.Kind
	// LeafKind is the leaf qdisc in use (after auto-detection).
	LeafKind plan.LeafKind
	// Writes counts every kernel write (netlink and BPF map), classifier
	// included. 0 means the device was already in sync.
	Writes int
	// Notes are one-line remarks (auto-detection, fallbacks, force).
	Notes []string
}

// InSync reports whether the run wrote nothing.
func (r Result) InSync() bool { return r.Writes == 0 }

// Changes is the number of class, leaf and classifier-entry changes.
func (r Result) Changes() int {
	return len(r.Created) + len(r.Changed) + len(r.Deleted) + len(r.Leaves) +
		r.Classifier.Added + r.Classifier.Changed + r.Classifier.Deleted
}

// Summary is one line: "dev X: classifier bpf, leaf fifo: created 3,
// changed 0, deleted 0 classes; ...; 12 writes" or "dev X: in sync".
func (r Result) Summary() string {
	if r.InSync() {
		return fmt.Sprintf("dev %s: in sync (classifier %s, leaf %s)", r.Dev, r.ClassifierKind, r.LeafKind)
	}
	return fmt.Sprintf("dev %s: classifier %s, leaf %s: classes created %d, changed %d, deleted %d; leaf qdiscs %d; classifier entries added %d, changed %d, deleted %d; %d writes",
		r.Dev, r.ClassifierKind, r.LeafKind, len(r.Created), len(r.Changed), len(r.Deleted), len(r.Leaves),
		r.Classifier.Added, r.Classifier.Changed, r.Classifier.Deleted, r.Writes)
}

// String is Summary followed by the notes, one per line.
func (r Result) String() string {
	var b strings.Builder
	b.WriteString(r.Summary())
	for _, n := range r.Notes {
		b.WriteString("\nnote: " + n)
	}
	for _, n := range r.Classifier.Notes {
		b.WriteString("\nnote: " + n)
	}
	return b.String()
}

// ClassStats are one class's kernel counters.
type ClassStats struct {
	// ClassID is the full class id (major<<16 | minor).
	ClassID uint32
	// Minor is the class's minor.
	Minor uint16
	// Bytes and Packets sent (HTB counts whole frames as dequeued).
	Bytes, Packets uint64
	// Drops counts packets dropped at the class (its leaf queue full).
	Drops uint32
	// Overlimits counts times the class was over its rate/ceil.
	Overlimits uint32
	// Backlog and Qlen are bytes and packets queued now.
	Backlog, Qlen uint32
}

// counters converts to the model's counters.
func (s ClassStats) counters() shaper.Counters {
	return shaper.Counters{Bytes: s.Bytes, Packets: s.Packets, Drops: uint64(s.Drops), Overlimits: uint64(s.Overlimits),
		Backlog: uint64(s.Backlog), Qlen: uint64(s.Qlen)}
}
