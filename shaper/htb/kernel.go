package htb

import (
	"errors"
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/vishvananda/netlink"
)

// do runs one kernel write and counts it when it succeeds.
func (r *Reconciler) do(f func() error) error {
	if err := f(); err != nil {
		return err
	}
	r.writes++
	return nil
}

func (r *Reconciler) link() (netlink.Link, error) {
	if r.dev == "" {
		return nil, errors.New("no device given")
	}
	l, err := r.h.LinkByName(r.dev)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", r.dev, err)
	}
	return l, nil
}

// rootHandle is the owned root qdisc's handle.
func rootHandle() uint32 { return netlink.MakeHandle(OwnedMajor, 0) }

// rootState finds the device's root qdisc and the qdiscs by parent.
type rootState struct {
	root     netlink.Qdisc
	owned    bool
	byParent map[uint32]netlink.Qdisc
}

func (r *Reconciler) readRoot(link netlink.Link) (rootState, error) {
	qs, err := r.h.QdiscList(link)
	if err != nil {
		return rootState{}, fmt.Errorf("dev %s: list qdiscs: %w", r.dev, err)
	}
	st := rootState{byParent: make(map[uint32]netlink.Qdisc, len(qs))}
	for _, q := range qs {
		a := q.Attrs()
		if a.LinkIndex != link.Attrs().Index {
			continue
		}
		if a.Parent == netlink.HANDLE_ROOT {
			st.root = q
			continue
		}
		st.byParent[a.Parent] = q
	}
	if h, ok := st.root.(*netlink.Htb); ok && h.Handle == rootHandle() {
		st.owned = true
	}
	return st, nil
}

// foreignErr describes a root qdisc gtpqos does not own.
func (r *Reconciler) foreignErr(q netlink.Qdisc) error {
	maj, _ := netlink.MajorMinor(q.Attrs().Handle)
	return fmt.Errorf("dev %s: root qdisc %s %x: %w (gtpqos's root is htb %x:); use --force to replace it",
		r.dev, q.Type(), maj, shaper.ErrNotOwned, OwnedMajor)
}

// kernelClass is a class in the kernel's units.
type kernelClass struct {
	rate, ceil      uint64 // bytes/s
	buffer, cbuffer uint32 // ticks
	quantum, prio   uint32
	parent          uint32
	level           uint32
	inner           bool
}

// parentID is the full id of c's parent (the root qdisc's for top-level
// classes), as toKernel gives it.
func parentID(t *Tree, c *Class) uint32 {
	if c.Parent == 0 {
		return rootHandle()
	}
	return t.ClassID(c.Parent)
}

func toKernel(t *Tree, c Class) kernelClass {
	k := kernelClass{rate: c.Rate / 8, ceil: c.Ceil / 8, quantum: c.Quantum, prio: c.Prio, inner: !c.IsLeaf()}
	k.buffer = netlink.Xmittime(k.rate, c.Burst)
	k.cbuffer = netlink.Xmittime(k.ceil, c.CBurst)
	k.parent = t.ClassID(c.Parent)
	if c.Parent == 0 {
		k.parent = rootHandle()
	}
	return k
}

func fromNetlink(h *netlink.HtbClass) kernelClass {
	return kernelClass{rate: h.Rate, ceil: h.Ceil, buffer: h.Buffer, cbuffer: h.Cbuffer, quantum: h.Quantum,
		prio: h.Prio, parent: h.Parent, level: h.Level}
}

// sameParent compares parents; HTB reports a top-level class's parent as
// TC_H_ROOT.
func sameParent(d, a uint32) bool {
	if a == netlink.HANDLE_ROOT {
		a = rootHandle()
	}
	return d == a
}

// same compares desired and actual. HTB sets quantum and prio only on leaf
// classes, so they are ignored for inner classes.
func same(d, a kernelClass) bool {
	if d.rate != a.rate || d.ceil != a.ceil || d.buffer != a.buffer || d.cbuffer != a.cbuffer {
		return false
	}
	if !d.inner && a.level == 0 && (d.quantum != a.quantum || d.prio != a.prio) {
		return false
	}
	return true
}

func (r *Reconciler) htbClass(link netlink.Link, t *Tree, c Class) *netlink.HtbClass {
	k := toKernel(t, c)
	hc := &netlink.HtbClass{
		ClassAttrs: netlink.ClassAttrs{LinkIndex: link.Attrs().Index, Handle: t.ClassID(c.Minor), Parent: k.parent},
		Rate:       k.rate, Ceil: k.ceil, Buffer: k.buffer, Cbuffer: k.cbuffer, Quantum: c.Quantum, Prio: c.Prio,
	}
	return hc
}

// listClasses returns the owned root's HTB classes by minor.
func (r *Reconciler) listClasses(link netlink.Link) (map[uint16]*netlink.HtbClass, error) {
	r.reads++
	cls, err := r.h.ClassList(link, rootHandle())
	if err != nil {
		return nil, fmt.Errorf("dev %s: list classes: %w", r.dev, err)
	}
	out := make(map[uint16]*netlink.HtbClass, len(cls))
	for _, c := range cls {
		hc, ok := c.(*netlink.HtbClass)
		if !ok {
			continue
		}
		maj, min := netlink.MajorMinor(hc.Handle)
		if maj != OwnedMajor || hc.LinkIndex != link.Attrs().Index {
			continue
		}
		out[min] = hc
	}
	return out, nil
}

// depth returns a class's depth below the root in the given parent map.
func depth(minor uint16, parent map[uint16]uint16) int {
	d := 0
	for m := minor; d < 16; d++ {
		p, ok := parent[m]
		if !ok || p == 0 {
			break
		}
		m = p
	}
	return d
}
