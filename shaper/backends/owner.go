package backends

import (
	"context"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// ownsHTB reports whether dev's root qdisc is the HTB backend's tree.
func ownsHTB(d Device) (bool, error) {
	link, err := d.Handle.LinkByName(d.Name)
	if err != nil {
		return false, fmt.Errorf("dev %s: %w", d.Name, err)
	}
	qs, err := d.Handle.QdiscList(link)
	if err != nil {
		return false, fmt.Errorf("dev %s: list qdiscs: %w", d.Name, err)
	}
	root := netlink.MakeHandle(plan.OwnedMajor, 0)
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT && q.Attrs().Handle == root && q.Type() == "htb" {
			return true, nil
		}
	}
	return false, nil
}

// otherOwner returns the registered backend, other than b, whose objects d
// holds (ok false: none). Two backends' trees must never meet on one
// device: one's root would be the other's foreign qdisc, and its programs,
// maps and pins would be left behind when the other replaced its root.
func otherOwner(d Device, b backend) (backend, bool, error) {
	for _, n := range Names() {
		other := registry[n]
		if n == b.name || other.owns == nil {
			continue
		}
		ok, err := other.owns(d)
		if err != nil || ok {
			return other, ok, err
		}
	}
	return backend{}, false, nil
}

// replaceOther makes a writer's device free of another backend's objects
// before b opens on it: without o.Force it refuses with one line naming the
// backend the device holds and how to remove it; with o.Force it removes
// them with that backend's own Reset (its tree, filters, programs and pins),
// so nothing of it is left behind. Objects the device does not use (the
// other backend's stale) go that way without o.Force.
func replaceOther(d Device, b backend, o Options) error {
	other, ok, err := otherOwner(d, b)
	if err != nil || !ok {
		return err
	}
	stale := false
	if other.stale != nil {
		if stale, err = other.stale(d); err != nil {
			return err
		}
	}
	if !o.Force && !stale {
		return fmt.Errorf("dev %s holds gtpqos's %s backend's objects, not %s's: remove them first with `gtpqos reset --dev %s`, or pass --force to replace them", d.Name, other.name, b.name, d.Name)
	}
	if b.probe != nil { // what b's Apply would refuse, refused before the other's objects go
		if err := b.probe(); err != nil {
			return fmt.Errorf("dev %s: not replacing the %s backend's objects: %w", d.Name, other.name, err)
		}
	}
	od := d
	od.Close = func() {} // the device's handle and lock stay b's
	be, err := other.open(od, Options{NetNS: o.NetNS, Direction: o.Direction})
	if err != nil {
		return fmt.Errorf("dev %s: open the %s backend to replace it: %w", d.Name, other.name, err)
	}
	_, err = be.Reset(context.Background())
	err = errors.Join(err, be.Close())
	if err != nil {
		return fmt.Errorf("dev %s: remove the %s backend's objects: %w", d.Name, other.name, err)
	}
	return nil
}
