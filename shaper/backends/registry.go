package backends

import (
	"fmt"
	"slices"
	"strings"

	"github.com/free5gc/gtpqos/shaper"
)

// Default is the backend used when a policy and the options name none.
const Default = "htb"

// backend is what a backend registers: how to open it on a device and how
// to plan for it without one (both required); check, override, keep, owns,
// probe and choices may be left out by a backend that has nothing to say there.
type backend struct {
	name string
	// open returns the backend for d.Name, working through d.Handle.
	open func(d Device, o Options) (shaper.Backend, error)
	// plan plans flows under pol (its overhead fixed) for dir's device.
	plan func(flows []shaper.Flow, pol shaper.Policy, dir shaper.Direction, why string) (Planned, error)
	// check says how the backend opened with o would find each packet's
	// flow under pol, or why it cannot enforce pol so (Check).
	check func(pol shaper.Policy, o Options) (string, error)
	// override returns pol with its knobs for this backend set from k.
	override func(pol shaper.Policy, k shaper.Knobs) (shaper.Policy, error)
	// keep returns next with the knobs of running that say how packets are
	// bound to classes (KeepBinding).
	keep func(running, next shaper.Policy) shaper.Policy
	// owns reports whether the device holds this backend's objects: Open
	// picks the backend that does when the caller names none and brings no
	// policy (reset, status, verify); nil: never claimed that way.
	owns func(d Device) (bool, error)
	// stale reports whether all the device holds of this backend is
	// objects nothing on it uses (nil: never): a writer of another
	// backend removes them (with this backend's Reset) without being
	// told to replace this backend.
	stale func(d Device) (bool, error)
	// probe checks, before anything is written, that this kernel and
	// process can run the backend (nil: nothing to check before open).
	probe func() error
	// choices are the values of the knobs that pick a kind, by knob, in a
	// few words (Choices).
	choices map[string]string
}

// registry holds the registered backends by name; filled by the init
// functions of this package's files, read-only afterwards.
var registry = map[string]backend{}

// register adds b; a name registered twice is a programming error.
func register(b backend) {
	if _, dup := registry[b.name]; dup {
		panic("backends: " + b.name + " registered twice")
	}
	registry[b.name] = b
}

// Names lists the registered backends, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// lookup returns the backend called name ("": Default), or one line
// naming the known ones.
func lookup(name string) (backend, error) {
	if name == "" {
		name = Default
	}
	b, ok := registry[name]
	if !ok {
		return backend{}, fmt.Errorf("unknown backend %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}
