package backends

import (
	"github.com/vishvananda/netns"

	"github.com/free5gc/gtpqos/shaper"
)

// Options configure a backend for one device.
type Options struct {
	// Backend names the backend ("" is Default).
	Backend string
	// NetNS is the network namespace the device is in (the lab's upf
	// namespace); 0 or netns.None(): the current one. The backend opens its
	// netlink handle and its own route-netlink socket there and closes them
	// in Close.
	NetNS netns.NsHandle
	// Force lets Apply replace a root qdisc gtpqos did not create.
	Force bool
	// Policy is the policy the backend will enforce, when the caller knows
	// it at open (apply, watch): the backend sets up for the device's life
	// what the policy's knobs ask of the kernel (HTB: its classifier). A
	// later Apply with another policy keeps that set-up.
	Policy *shaper.Policy
	// Knobs override the backend's knobs in every policy it applies, for
	// its life (`gtpqos ab --classifier`): keys and values as the policy
	// file's section for the backend gives them, read by the backend.
	Knobs shaper.Knobs
	// Marks says whether the device's packets carry their flow's mark,
	// when the caller knows (watch: from gtp5g's features).
	Marks Marks
	// Incremental makes Apply trust its last write between Resyncs (the
	// watch daemon).
	Incremental bool
	// Direction is the flows' direction on this device (downlink on N3,
	// uplink on N6): it picks the half of a GTP-U classifier.
	Direction shaper.Direction
	// N3 names the N3 device (the GTP-U classifier's uplink entries live
	// on its ingress).
	N3 string
	// Shared holds what a UPF's N3 and N6 backends share (the GTP-U
	// classifier's objects); nil: nothing shared.
	Shared *Shared
	// OnPool, if set, hears how far the background build of the pool of
	// spare classes got (incremental backends): ready of want spares.
	OnPool func(dev string, ready, want int)
	// Writer, when set, names the command that will write the device's
	// QoS state ("apply", "reset", "watch", "ab"): Open then takes the
	// device's lock (package devlock) in LockDir (default
	// devlock.DefaultDir), failing at once with a *devlock.HeldError when
	// another writer holds it, and the Backend's Close releases it.
	// Readers (status, verify, plan) leave it empty.
	Writer string
	// WriterRole is the device's role for a watch ("n3", "n6"), recorded
	// in the lock so that `gtpqos status` finds a running watch's devices.
	WriterRole string
	LockDir    string
}

// Marks says whether packets reach the device marked with their flow's
// mark.
type Marks uint8

const (
	// MarksAsPolicy leaves it to the policy's knobs (apply, plan: the
	// operator's choice).
	MarksAsPolicy Marks = iota
	// Marked: gtp5g marks every packet (the gtpqos patch); a policy whose
	// backend would not classify by mark is refused (Check).
	Marked
	// Unmarked: packets carry no mark (stock gtp5g); the backend finds each
	// packet's flow from the packet itself (HTB: TEID and QFI from the
	// GTP-U header, with the classifier objects in Shared).
	Unmarked
)
