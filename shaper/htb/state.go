package htb

import (
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/vishvananda/netlink"
)

// devState is what a device holds as one Reconcile works on it: read from
// the kernel (a full run) or remembered from the last successful run (an
// incremental run). Reconcile updates it as it writes, so after a
// successful run it is what the kernel holds, and in incremental mode it is
// remembered for the next run to diff against.
type devState struct {
	// ifindex is the device the state belongs to; a device recreated under
	// the same name has another index, so a remembered state is not used
	// for it.
	ifindex int
	// root is the owned root HTB qdisc.
	root *netlink.Htb
	// byParent holds the leaf qdiscs by parent class id.
	byParent map[uint32]netlink.Qdisc
	// classes are the HTB classes under the root by minor.
	classes map[uint16]*netlink.HtbClass

	// Set when the state is remembered (after a successful run): tree is
	// the header of the desired tree made true (no classes), table the classifier's entries and cls
	// the classifier that holds them; link is the device and leaf the leaf
	// kind in use, so an incremental update reads neither back.
	tree  *Tree
	table classify.Table
	cls   classify.Classifier
	link  netlink.Link
	leaf  shaper.LeafKind
}

// usableFor reports whether a remembered state can stand in for the
// kernel's tree for desired: same device, same classifier, same leaf spec.
// Anything else (a config reload that switches classifier or leaf) takes a
// full run.
func (m *devState) usableFor(link netlink.Link, desired *Tree, cls classify.Classifier) bool {
	return m != nil && m.tree != nil && m.ifindex == link.Attrs().Index && m.cls == cls &&
		m.tree.Leaf == desired.Leaf && m.tree.Major == desired.Major
}

// written records a class the run created or changed, in the kernel's units
// as Reconcile wrote it (level 0: HTB reports a class without children as
// a leaf, and a class with children is never compared on quantum or prio).
func (m *devState) written(hc *netlink.HtbClass) {
	_, min := netlink.MajorMinor(hc.Handle)
	c := *hc
	m.classes[min] = &c
}

// deleted records a class the run deleted (its leaf qdisc goes with it).
func (m *devState) deleted(t *Tree, minor uint16) {
	delete(m.classes, minor)
	delete(m.byParent, t.ClassID(minor))
}

// treeHeader is t without its classes: what a remembered state needs of
// the tree made true (major, leaf spec); its classes are in the state's
// kernel form already, and a copy would cost a class list per device.
func treeHeader(t *Tree) *Tree {
	c := *t
	c.Classes = nil
	return &c
}

// readState reads the device's tree from the kernel, creating the root HTB
// (with its link and default classes) first where the device has none.
func (r *Reconciler) readState(link netlink.Link, desired *Tree, res *Result) (*devState, error) {
	st, err := r.readRoot(link)
	if err != nil {
		return nil, err
	}
	if !st.owned {
		if st.root != nil && st.root.Attrs().Handle != 0 {
			if !r.force {
				return nil, r.foreignErr(st.root)
			}
			maj, _ := netlink.MajorMinor(st.root.Attrs().Handle)
			res.Notes = append(res.Notes, fmt.Sprintf("replaced foreign root qdisc %s %x: (--force)", st.root.Type(), maj))
		}
		if err := r.createRoot(link, desired); err != nil {
			return nil, err
		}
		res.CreatedRoot = true
		if st, err = r.readRoot(link); err != nil {
			return nil, err
		}
		if !st.owned {
			return nil, fmt.Errorf("dev %s: root qdisc htb %x: not found after creating it", r.dev, OwnedMajor)
		}
	} else {
		res.Adopted = true
	}
	classes, err := r.listClasses(link)
	if err != nil {
		return nil, err
	}
	return &devState{ifindex: link.Attrs().Index, root: st.root.(*netlink.Htb), byParent: st.byParent, classes: classes}, nil
}

// createRoot creates the root HTB, link and default classes on a device
// without a gtpqos tree. If a class fails, the root is deleted again so no
// packet sits in HTB's direct queue.
func (r *Reconciler) createRoot(link netlink.Link, desired *Tree) error {
	q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: rootHandle(), Parent: netlink.HANDLE_ROOT})
	q.Defcls = uint32(desired.DefaultMinor)
	if err := r.do(func() error { return r.h.QdiscReplace(q) }); err != nil {
		return fmt.Errorf("dev %s: create root qdisc htb %x: %w", r.dev, OwnedMajor, err)
	}
	for _, m := range []uint16{LinkMinor, desired.DefaultMinor} {
		c, ok := desired.Find(m)
		if !ok {
			continue
		}
		if err := r.do(func() error { return r.h.ClassReplace(r.htbClass(link, desired, c)) }); err != nil {
			_ = r.h.QdiscDel(q)
			return fmt.Errorf("dev %s: create %s class %s: %w (root qdisc removed again)", r.dev, c.Role, desired.Handle(m), err)
		}
	}
	return nil
}
