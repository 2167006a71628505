package backends

import (
	"errors"
	"fmt"
	"io"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/devlock"
)

// Device is what Open hands a backend: the device's name, a route-netlink
// handle in its namespace, and what releases the handle (and the device's
// lock, for a writer); the backend's Close calls Close.
type Device struct {
	Name   string
	NetNS  netns.NsHandle
	Handle *netlink.Handle
	Close  func()
}

// Open returns the backend for dev. It checks the backend's name and that
// the device exists, and takes the device's lock for a writer. With no
// backend and no policy in o it opens the backend whose objects dev holds
// (Default when none does).
func Open(dev string, o Options) (shaper.Backend, error) {
	if _, err := lookup(o.Backend); err != nil {
		return nil, err
	}
	d, err := openDevice(dev, o)
	if err != nil {
		return nil, err
	}
	b, err := pick(d, o)
	if err == nil && o.Writer != "" && (o.Backend != "" || o.Policy != nil) {
		err = replaceOther(d, b, o)
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	be, err := b.open(d, o)
	if err != nil {
		d.Close()
		return nil, err
	}
	return be, nil
}

// pick returns the backend o names; when it names none and brings no
// policy (reset, status, verify: commands that read or clear whatever the
// device holds), the backend whose objects the device holds, else
// Default.
func pick(d Device, o Options) (backend, error) {
	if o.Backend != "" || o.Policy != nil {
		return lookup(o.Backend)
	}
	for _, n := range Names() {
		b := registry[n]
		if b.owns == nil {
			continue
		}
		ok, err := b.owns(d)
		if err != nil {
			return backend{}, err
		}
		if ok {
			return b, nil
		}
	}
	return lookup("")
}

// ReadCloser is a backend opened to read a device: its Reader half and
// Close.
type ReadCloser interface {
	shaper.Reader
	io.Closer
}

// OpenReader returns the reading half of dev's backend (status, verify);
// it takes no lock, so o.Writer must be empty.
func OpenReader(dev string, o Options) (ReadCloser, error) {
	if o.Writer != "" {
		return nil, errors.New("OpenReader: a reader takes no device lock (Writer set)")
	}
	return Open(dev, o)
}

// openDevice opens a route-netlink handle in o.NetNS, checks that dev
// exists there, and takes its lock when o.Writer is set.
func openDevice(dev string, o Options) (Device, error) {
	ns := o.NetNS
	if ns == 0 {
		ns = netns.None()
	}
	// Route netlink only: xfrm or netfilter netlink may be missing
	// (minimal VMs, containers), and nothing here needs them.
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return Device{}, fmt.Errorf("open netlink: %w", err)
	}
	if dev == "" {
		h.Close()
		return Device{}, fmt.Errorf("no device given")
	}
	if _, err := h.LinkByName(dev); err != nil {
		h.Close()
		return Device{}, fmt.Errorf("device %s: %w", dev, err)
	}
	d := Device{Name: dev, NetNS: ns, Handle: h, Close: h.Close}
	if o.Writer != "" {
		dir := o.LockDir
		if dir == "" {
			dir = devlock.DefaultDir
		}
		lk, err := devlock.Acquire(dir, dev, devlock.Holder{Command: o.Writer, Role: o.WriterRole})
		if err != nil {
			h.Close()
			return Device{}, err
		}
		d.Close = func() { h.Close(); _ = lk.Release() }
	}
	return d, nil
}
