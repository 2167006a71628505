package shaper

import (
	"github.com/vishvananda/netlink"
)

// view is a device's tree as one Reconcile works on it: read from the
// kernel (a full run) or taken from the memory of the last successful run
// (an incremental run). Reconcile updates it as it writes, so after a
// successful run it is what the kernel holds, and in incremental mode it
// becomes the memory the next run diffs against.
type view struct {
	// ifindex is the device the view belongs to; a device recreated under
	// the same name has another index, so the memory is not used for it.
	ifindex int
	// root is the owned root HTB qdisc.
	root *netlink.Htb
	// byParent holds the leaf qdiscs by parent class id.
	byParent map[uint32]netlink.Qdisc
	// classes are the HTB classes under the root by minor.
	classes map[uint16]*netlink.HtbClass

	// Set when the view becomes memory (after a successful run):
	// tree is the desired tree made true (the classifier's entries are its
	// flow classes' keys), cls the classifier that holds them.
	tree *Tree
	cls  Classifier
}

// memoryFits reports whether the remembered view can stand in for the
// kernel's tree for desired: same device, same classifier, same leaf spec.
// Anything else (a config reload that switches classifier or leaf) takes a
// full run.
func (m *view) memoryFits(link netlink.Link, desired *Tree, cls Classifier) bool {
	return m != nil && m.tree != nil && m.ifindex == link.Attrs().Index && m.cls == cls &&
		m.tree.Leaf == desired.Leaf && m.tree.Major == desired.Major
}

// written records a class the run created or changed, in the kernel's units
// as Reconcile wrote it (level 0: HTB reports a class without children as
// a leaf, and a class with children is never compared on quantum or prio).
func (m *view) written(hc *netlink.HtbClass) {
	_, min := netlink.MajorMinor(hc.Handle)
	c := *hc
	m.classes[min] = &c
}

// deleted records a class the run deleted (its leaf qdisc goes with it).
func (m *view) deleted(t *Tree, minor uint16) {
	delete(m.classes, minor)
	delete(m.byParent, t.ClassID(minor))
}

// cloneTree copies t's class list so the memory does not change with the
// caller's tree.
func cloneTree(t *Tree) *Tree {
	c := *t
	c.Classes = append([]Class(nil), t.Classes...)
	return &c
}
