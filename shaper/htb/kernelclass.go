package htb

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
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
func rootHandle() uint32 { return netlink.MakeHandle(plan.OwnedMajor, 0) }

// foreignErr describes a root qdisc gtpqos does not own.
func (r *Reconciler) foreignErr(q netlink.Qdisc) error {
	maj, _ := netlink.MajorMinor(q.Attrs().Handle)
	return fmt.Errorf("dev %s: root qdisc %s %x: %w (gtpqos's root is htb %x:); use --force to replace it",
		r.dev, q.Type(), maj, shaper.ErrNotOwned, plan.OwnedMajor)
}

// kernelClass is a class in the kernel's units.
type kernelClass struct {
	rate, ceil      uint64 // bytes/s
	buffer, cbuffer uint32 // ticks
	quantum, prio   uint32
	parent          uint32
	level           uint32
	inner           bool
	over            rateOverhead // bytes added to every packet
}

// parentID is the full id of c's parent (the root qdisc's for top-level
// classes), as toKernel gives it.
func parentID(t *plan.Tree, c *plan.Class) uint32 {
	if c.Parent == 0 {
		return rootHandle()
	}
	return t.ClassID(c.Parent)
}

func toKernel(t *plan.Tree, c plan.Class) kernelClass {
	k := kernelClass{rate: c.Rate / 8, ceil: c.Ceil / 8, quantum: c.Quantum, prio: c.Prio, inner: !c.IsLeaf(),
		over: rateOverhead{uint16(c.Overhead), uint16(c.Overhead)}}
	// Checked when planned (CheckPolicy, CheckFlow): a bucket that
	// does not fit saturates instead of wrapping.
	k.buffer = bufferTicks(c.Rate, c.Burst)
	k.cbuffer = bufferTicks(c.Ceil, c.CBurst)
	k.parent = t.ClassID(c.Parent)
	if c.Parent == 0 {
		k.parent = rootHandle()
	}
	return k
}

// bufferTicks is BufferTicks, saturated at the field's largest
// value.
func bufferTicks(rate uint64, size uint32) uint32 {
	if t, ok := plan.BufferTicks(rate, size); ok {
		return t
	}
	return plan.MaxBufferTicks
}

func fromNetlink(h *netlink.HtbClass, over rateOverhead) kernelClass {
	return kernelClass{rate: h.Rate, ceil: h.Ceil, buffer: h.Buffer, cbuffer: h.Cbuffer, quantum: h.Quantum,
		prio: h.Prio, parent: h.Parent, level: h.Level, over: over}
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
	if d.rate != a.rate || d.ceil != a.ceil || d.buffer != a.buffer || d.cbuffer != a.cbuffer || d.over != a.over {
		return false
	}
	if !d.inner && a.level == 0 && (d.quantum != a.quantum || d.prio != a.prio) {
		return false
	}
	return true
}

func (r *Reconciler) htbClass(link netlink.Link, t *plan.Tree, c plan.Class) *netlink.HtbClass {
	k := toKernel(t, c)
	hc := &netlink.HtbClass{
		ClassAttrs: netlink.ClassAttrs{LinkIndex: link.Attrs().Index, Handle: t.ClassID(c.Minor), Parent: k.parent},
		Rate:       k.rate, Ceil: k.ceil, Buffer: k.buffer, Cbuffer: k.cbuffer, Quantum: c.Quantum, Prio: c.Prio,
	}
	return hc
}

// writeClass creates (create) or changes class c of t with its rate-spec
// overhead and returns what it wrote.
func (r *Reconciler) writeClass(link netlink.Link, t *plan.Tree, c plan.Class, create bool) (*netlink.HtbClass, rateOverhead, error) {
	hc, over := r.htbClass(link, t, c), toKernel(t, c).over
	flags := 0
	if create {
		flags = unix.NLM_F_CREATE
	}
	req, err := classReq(flags, hc, over)
	if err == nil {
		var tc *rtnl
		if tc, err = r.tc(link); err == nil {
			err = r.do(func() error { return tc.do(req) })
		}
	}
	return hc, over, err
}

// listClasses returns the owned root's HTB classes by minor, with their
// rate-spec overheads (which vishvananda/netlink does not decode), in a
// table with room for minors up to maxMinor.
func (r *Reconciler) listClasses(link netlink.Link, maxMinor uint16) (plan.MinorTable[kernelClass], error) {
	r.reads++
	out := plan.NewMinorTable[kernelClass](maxMinor)
	c, err := r.tc(link)
	if err != nil {
		return out, err
	}
	idx := link.Attrs().Index
	err = c.query(classDumpReq(idx, rootHandle()), unix.RTM_NEWTCLASS, func(b []byte) error {
		hc, o, ok, err := parseClass(b)
		if err != nil || !ok {
			return err
		}
		maj, min := netlink.MajorMinor(hc.Handle)
		if maj != plan.OwnedMajor || hc.LinkIndex != idx {
			return nil
		}
		out.Set(min, fromNetlink(hc, o))
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("dev %s: list classes: %w", r.dev, err)
	}
	return out, nil
}

// classDel deletes class minor of a device's tree as remembered.
func (r *Reconciler) classDel(ifindex int, minor uint16, k kernelClass) error {
	return r.h.ClassDel(&netlink.HtbClass{
		ClassAttrs: netlink.ClassAttrs{LinkIndex: ifindex, Handle: netlink.MakeHandle(plan.OwnedMajor, minor), Parent: k.parent},
		Rate:       k.rate, Ceil: k.ceil, Buffer: k.buffer, Cbuffer: k.cbuffer, Quantum: k.quantum, Prio: k.prio,
	})
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
