package edtbackend

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// Pins outlive what they were made for: a device deleted, or a network
// namespace gone (the daemon's container restarted). A namespace made
// later may get a dead one's inode number, and with it that namespace's
// pin directories. So pins count as the device's only while its egress
// filter of ours runs the pinned program; pins the device does not run
// are stale: never adopted (their maps hold another device's flows, sized
// for its policy), and no claim on the device against another backend.

// pinsRun reports whether dev's egress filter of ours runs the program
// pinned in its pin directory (false: no such filter, or no such pin).
// The pin is opened only when there is a filter to compare it with.
func pinsRun(h *netlink.Handle, dev string, pins classify.Pins) (bool, error) {
	f, err := ourFilter(h, dev)
	if err != nil || f == nil {
		return false, err
	}
	path, had, err := pins.Lookup(edt.PinProgram)
	if err != nil || !had {
		return false, err
	}
	prog, err := ebpf.LoadPinnedProgram(path, nil)
	if err != nil {
		return false, fmt.Errorf("dev %s: open pinned program %s: %w", dev, path, err)
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		return false, fmt.Errorf("dev %s: pinned program %s: info: %w", dev, path, err)
	}
	id, _ := info.ID()
	return uint32(f.Id) == uint32(id), nil
}

// ourFilter returns the edt program's filter on dev's clsact egress hook
// (nil: none).
func ourFilter(h *netlink.Handle, dev string) (*netlink.BpfFilter, error) {
	link, err := h.LinkByName(dev)
	if err != nil {
		return nil, fmt.Errorf("dev %s: %w", dev, err)
	}
	fs, err := h.FilterList(link, netlink.HANDLE_MIN_EGRESS)
	if err != nil {
		return nil, fmt.Errorf("dev %s: list clsact egress filters: %w", dev, err)
	}
	for _, f := range fs {
		if bf, ok := f.(*netlink.BpfFilter); ok && gtpu.BaseName(bf.Name) == FilterName {
			return bf, nil
		}
	}
	return nil, nil
}

// Stale reports whether all dev (through h, in namespace ns) holds of the
// edt backend is pins: no tree, no filter of ours (so nothing runs the
// pinned program). Such pins are what a writer of another backend may
// remove without being told to replace this one.
func Stale(h *netlink.Handle, ns netns.NsHandle, dev string) (bool, error) {
	pins, err := PinsIn(ns, dev)
	if err != nil {
		return false, nil // no pin directory: nothing to be stale
	}
	if _, had, err := pins.Lookup(edt.PinProgram); err != nil || !had {
		return false, err
	}
	if tree, err := hasTree(h, dev); err != nil || tree {
		return false, err
	}
	f, err := ourFilter(h, dev)
	return f == nil, err
}
