package classify

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Pin names of the mark classifier, in its device's pin directory.
const (
	markProgPin = bpfProgName
	markMapPin  = bpfMapName
)

func markPins(env Env) (Pins, error) { return DevicePins(env.Link.Attrs().Name) }

// pinMark pins a freshly loaded program and map, the map first: a reader
// that finds the program's pin finds its map's.
func pinMark(pins Pins, m *ebpf.Map, p *ebpf.Program) error {
	if err := pins.Replace(markMapPin, m.FD()); err != nil {
		return err
	}
	return pins.Replace(markProgPin, p.FD())
}

// RemoveMarkPins removes the mark classifier's pins of env's device (only
// those): for a caller that deleted the root qdisc, and the filter with it.
func RemoveMarkPins(env Env) error { return unpinMark(env) }

// unpinMark removes the mark classifier's pins of the device (only those).
func unpinMark(env Env) error {
	pins, err := markPins(env)
	if err != nil {
		return err
	}
	return pins.Remove(markProgPin, markMapPin)
}

// adoptPinned opens the pinned program and map if they are the installed
// program (kernel id id) and its map: the ids decide, so a pin replaced
// behind gtpqos's back is never used. It reports false (and no error) when
// there is no usable pin.
func (c *MarkBPF) adoptPinned(env Env, id int) (bool, error) {
	pins, err := markPins(env)
	if err != nil {
		return false, nil
	}
	pp, ok, err := pins.Lookup(markProgPin)
	if err != nil || !ok {
		return false, err
	}
	mp, ok, err := pins.Lookup(markMapPin)
	if err != nil || !ok {
		return false, err
	}
	p, err := ebpf.LoadPinnedProgram(pp, nil)
	if err != nil {
		return false, nil // pinned by another user, or not a program
	}
	info, err := p.Info()
	pid, _ := info.ID()
	if err != nil || int(pid) != id {
		p.Close()
		return false, nil // a stale pin: the installed program is another
	}
	m, err := ebpf.LoadPinnedMap(mp, nil)
	if err != nil {
		p.Close()
		return false, nil
	}
	minfo, err := m.Info()
	mid, _ := minfo.ID()
	ids, _ := info.MapIDs()
	if err != nil || !slices.Contains(ids, mid) || m.KeySize() != 4 || m.ValueSize() != 4 {
		p.Close()
		m.Close()
		return false, nil
	}
	c.Close()
	c.m, c.prog, c.progID = m, p, id
	return true, nil
}

// adoptByIDErr says why the installed program could not be opened.
func adoptByIDErr(env Env, id int, err error) error {
	if errors.Is(err, unix.EPERM) && !HasCap(unix.CAP_SYS_ADMIN) {
		pins, _ := markPins(env)
		return fmt.Errorf("open installed BPF program %d: it is not pinned in %s (or pinned by another user), and opening it by id needs CAP_SYS_ADMIN: run as the user that installed it, or 'gtpqos reset' it as root", id, pins.Dir)
	}
	return fmt.Errorf("open installed BPF program %d: %w", id, err)
}

// Ready implements Readier: it fails, writing nothing to the device, when
// this process could not install or adopt the classifier: a capability
// missing for the program, or no usable pin directory without
// CAP_SYS_ADMIN (a later process could not open the program).
func (c *MarkBPF) Ready(dev string) error {
	if missing := MissingCaps(unix.CAP_NET_ADMIN); len(missing) > 0 {
		return fmt.Errorf("classifier bpf needs CAP_NET_ADMIN")
	}
	m, p, err := c.load()
	if err != nil {
		return err
	}
	p.Close()
	m.Close()
	pins, err := DevicePins(dev)
	if err == nil {
		err = pins.Ensure()
	}
	if err != nil {
		if HasCap(unix.CAP_SYS_ADMIN) {
			return nil // adopts by id
		}
		return err
	}
	// A pin that is not one (a planted symlink) is refused now, not
	// after the tree is built.
	for _, n := range []string{markProgPin, markMapPin} {
		if _, _, err := pins.Lookup(n); err != nil {
			return err
		}
	}
	return nil
}
