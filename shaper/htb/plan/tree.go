package plan

import (
	"fmt"
	"sort"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/spec"
)

// Fixed parts of every tree gtpqos builds.
const (
	// OwnedMajor is the handle major of the root HTB qdisc gtpqos creates
	// (0x6771, ASCII "gq"; tc shows 6771:). A device whose root qdisc is HTB
	// with this major is gtpqos's; see the package doc.
	OwnedMajor uint16 = 0x6771
	// LinkMinor is the link (bottleneck) class, parent of everything else.
	LinkMinor uint16 = 0x1
	// DefaultMinor is the default class that takes unclassified packets. It
	// always exists while the root qdisc does.
	DefaultMinor uint16 = 0x2
	// FirstFlowMinor is the first minor given to session and flow classes.
	FirstFlowMinor uint16 = 0x10
	// LastFlowMinor is the last minor given to session and flow classes
	// (0xffff is left alone: it is the clsact/ingress major for leaf handles).
	LastFlowMinor uint16 = 0xfffe
)

// MaxClasses is how many session and flow classes one tree can hold:
// minors FirstFlowMinor..LastFlowMinor except OwnedMajor (leaf qdisc handles
// reuse the class minor as their major, and must not collide with the root).
const MaxClasses = int(LastFlowMinor-FirstFlowMinor) + 1 - 1

// Class is one HTB class of a tree. Rates are bit/s, sizes bytes.
type Class struct {
	// Minor is the class id's minor (the major is Tree.Major).
	Minor uint16
	// Parent is the parent class's minor; 0 means the root qdisc.
	Parent uint16
	// Role says what the class is for.
	Role shaper.Role
	// Rate is HTB's rate (the guarantee) in bit/s.
	Rate uint64
	// Ceil is HTB's ceil (the maximum) in bit/s.
	Ceil uint64
	// Burst and CBurst are the token buckets in bytes. In a tree read from
	// the kernel they are converted back from ticks and may be off by a
	// byte or so; the Reconciler compares in the kernel's units.
	Burst, CBurst uint32
	// Quantum is the DRR quantum in bytes.
	Quantum uint32
	// Prio is HTB's priority (0..7).
	Prio uint32
	// Overhead is the bytes the class's rate spec adds to every packet
	// (tc's "overhead"): under packet accounting the link class adds back
	// what the root's size table takes off, so it counts frames on the
	// wire; 0 everywhere else.
	Overhead uint32
	// Budget is the delay budget of the class's queue (a flow's QFI's, else
	// the policy's default) and QueueLimit the byte limit of its FIFO leaf
	// (QueueLimit: ceil × budget, at least a few frames). Both are 0 in a
	// tree read from the kernel, and QueueLimit 0 in a tree not made by
	// Plan leaves HTB's built-in pfifo.
	Budget     time.Duration
	QueueLimit uint32

	// Flow is the flow's identity (RoleFlow; zero in a tree read from the
	// kernel, which does not know it).
	Flow shaper.FlowID
	// Name is the flow's label (RoleFlow, from Flow.Name).
	Name string
	// Direction is the flow's direction (RoleFlow).
	Direction shaper.Direction
	// Mark is the flow's skb->mark (RoleFlow; 0 = none).
	Mark uint32
	// TEID and QFI identify the flow on N3 for (TEID, QFI) classifiers.
	TEID uint32
	// QFI is the flow's QoS Flow Identifier.
	QFI uint8
	// GBR and MBR are the flow's contract (RoleFlow), kept for output and
	// for callers judging compliance; they may differ from Rate/Ceil.
	GBR, MBR uint64
	// SEID is the session of a RoleSession class (or of a flow).
	SEID uint64
}

// Tree is a desired or actual HTB tree for one device.
type Tree struct {
	// Major is the root qdisc's handle major (OwnedMajor).
	Major uint16
	// DefaultMinor is the minor HTB's default points at.
	DefaultMinor uint16
	// LinkRate is the link class's rate in bit/s.
	LinkRate uint64
	// Leaf is the qdisc under each leaf class (flows and default).
	Leaf LeafSpec
	// Classifier is the classifier kind the tree is meant for.
	Classifier spec.Kind
	// Accounting is the bytes the classes count. Under packet accounting
	// the root qdisc has a size table that takes Overhead off every
	// packet's length, so every class counts the user's packet; the link
	// class adds Overhead back (Class.Overhead). Frame accounting has
	// neither.
	Accounting shaper.Accounting
	// Overhead is the bytes a frame at the qdisc carries besides the
	// user's packet (packet accounting; 0 with frame accounting).
	Overhead uint32
	// Classes are all classes, sorted by minor.
	Classes []Class
}

// ClassID returns the full tc class id (major<<16 | minor) of minor.
func (t *Tree) ClassID(minor uint16) uint32 { return uint32(t.Major)<<16 | uint32(minor) }

// Find returns the class with the given minor.
func (t *Tree) Find(minor uint16) (Class, bool) {
	i := sort.Search(len(t.Classes), func(i int) bool { return t.Classes[i].Minor >= minor })
	if i < len(t.Classes) && t.Classes[i].Minor == minor {
		return t.Classes[i], true
	}
	return Class{}, false
}

// FlowClass returns the class of the flow with the given id.
func (t *Tree) FlowClass(id shaper.FlowID) (Class, bool) {
	for _, c := range t.Classes {
		if c.Role == shaper.RoleFlow && c.Flow == id {
			return c, true
		}
	}
	return Class{}, false
}

// Key is what binds the class's packets (flow classes).
func (c Class) Key() shaper.Key { return shaper.Key{Mark: c.Mark, TEID: c.TEID, QFI: c.QFI} }

// IsLeaf reports whether a class of this tree has no children (flows,
// Spares and the default class): it holds a leaf qdisc.
func (c Class) IsLeaf() bool {
	return c.Role == shaper.RoleFlow || c.Role == shaper.RoleDefault || c.Role == shaper.RoleSpare
}

// spareRate is a spare class's rate and ceil (bit/s): it carries nothing,
// and the rate is high enough that its buckets fit HTB's tick counters.
const spareRate = 8_000

// SpareClass is an idle class kept ready under the link class. It
// carries nothing, so it keeps HTB's built-in pfifo (no QueueLimit): the
// flow that takes it sizes its leaf.
func SpareClass(base Class, minor uint16) Class {
	c := base
	c.Minor, c.Parent, c.Role, c.Rate, c.Ceil, c.Prio = minor, LinkMinor, shaper.RoleSpare, spareRate, spareRate, 7
	return c
}

// LooksSpare reports whether a class read from the kernel is a spare: a
// leaf under the link class at the spare rate, nothing bound to it.
func LooksSpare(c Class) bool {
	return c.Role == shaper.RoleFlow && c.Parent == LinkMinor && c.Rate == spareRate && c.Ceil == spareRate && c.Key() == (shaper.Key{})
}

// Handle formats a minor as tc does: "6771:1a".
func (t *Tree) Handle(minor uint16) string { return fmt.Sprintf("%x:%x", t.Major, minor) }

// FlowClasses returns the flow classes in minor order.
func (t *Tree) FlowClasses() []Class {
	out := make([]Class, 0, len(t.Classes))
	for _, c := range t.Classes {
		if c.Role == shaper.RoleFlow {
			out = append(out, c)
		}
	}
	return out
}

// SortClasses sorts by minor.
func (t *Tree) SortClasses() {
	sort.Slice(t.Classes, func(i, j int) bool { return t.Classes[i].Minor < t.Classes[j].Minor })
}

// entry is flow class c's classifier entry in a tree whose root has the
// given major: its class id and its flow's keys.
func (c Class) entry(major uint16) spec.Entry {
	return spec.Entry{ClassID: uint32(major)<<16 | uint32(c.Minor), Flow: c.Flow, Mark: c.Mark, TEID: c.TEID, QFI: c.QFI}
}

// Table returns the classification table of the tree's flow classes, in
// Minor order, and its default class.
func (t *Tree) Table() spec.Table { return t.TableOf(nil) }

// TableOf is Table for the flow classes whose minor keep accepts (nil:
// All of them).
func (t *Tree) TableOf(keep func(minor uint16) bool) spec.Table {
	tb := spec.Table{Default: t.ClassID(t.DefaultMinor), Entries: make([]spec.Entry, 0, len(t.Classes))}
	for _, c := range t.Classes {
		if c.Role == shaper.RoleFlow && (keep == nil || keep(c.Minor)) {
			tb.Entries = append(tb.Entries, c.entry(t.Major))
		}
	}
	return tb
}
