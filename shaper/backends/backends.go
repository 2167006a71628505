// Package backends opens a shaper.Backend by name: the one place that knows
// which backends exist, so the CLI, the watch engine and the lab never name
// one. Adding a backend means adding a case here.
//
// It may import the model and every backend package.
package backends

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/devlock"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// Default is the backend used when a policy names none.
const Default = htb.Name

// Names lists the backends gtpqos has.
var Names = []string{htb.Name}

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
	// Classifier and Leaf override the policy's kinds ("" keeps them).
	Classifier shaper.ClassifierKind
	Leaf       shaper.LeafKind
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

// Shared is what the backends of one UPF share: the GTP-U classifier,
// whose N3 ingress program marks uplink packets for the N6 tree.
type Shared struct{ gtpu *gtpu.Classifier }

// NewShared returns the shared state for a UPF whose N3 device is n3.
func NewShared(n3 string) *Shared { return &Shared{gtpu: gtpu.New(gtpu.Options{N3: n3})} }

// SetSDF hands the sessions' SDF rules (qosview.SDFRules) to the shared
// GTP-U classifier, which then finds each flow inside a session by its
// PDR's filter; see gtpu.Classifier.SetSDF.
func (s *Shared) SetSDF(rules []shaper.SessionRules) ([]string, error) {
	res, err := s.gtpu.SetSDF(rules)
	return res.Notes, err
}

// Close detaches what the shared classifier attached through h (nil: the
// current network namespace) and releases its objects.
func (s *Shared) Close(h *netlink.Handle) error {
	if s == nil {
		return nil
	}
	if h == nil {
		var err error
		if h, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
			return fmt.Errorf("open netlink: %w", err)
		}
		defer h.Close()
	}
	return s.gtpu.Close(h)
}

// Open returns the backend for dev. It checks that the device exists.
func Open(dev string, o Options) (shaper.Backend, error) {
	name := o.Backend
	if name == "" {
		name = Default
	}
	if name != htb.Name {
		return nil, fmt.Errorf("unknown backend %q (want %s)", name, htb.Name)
	}
	ns := o.NetNS
	if ns == 0 {
		ns = netns.None()
	}
	// Route netlink only: xfrm or netfilter netlink may be missing
	// (minimal VMs, containers), and nothing here needs them.
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open netlink: %w", err)
	}
	if dev == "" {
		h.Close()
		return nil, fmt.Errorf("no device given")
	}
	if _, err := h.LinkByName(dev); err != nil {
		h.Close()
		return nil, fmt.Errorf("device %s: %w", dev, err)
	}
	closeH := h.Close
	if o.Writer != "" {
		dir := o.LockDir
		if dir == "" {
			dir = devlock.DefaultDir
		}
		lk, err := devlock.Acquire(dir, dev, devlock.Holder{Command: o.Writer, Role: o.WriterRole})
		if err != nil {
			h.Close()
			return nil, err
		}
		closeH = func() { h.Close(); _ = lk.Release() }
	}
	ho := htb.Options{Force: o.Force, Classifier: o.Classifier, Leaf: o.Leaf, Incremental: o.Incremental, N3: o.N3,
		Direction: o.Direction, NetNS: ns, OnPool: o.OnPool}
	if o.Classifier == shaper.KindGTPU {
		g := gtpu.New(gtpu.Options{N3: o.N3})
		if o.Shared != nil {
			g = o.Shared.gtpu
		}
		ho.Custom = g.Downlink()
		if o.Direction == shaper.Uplink {
			ho.Custom = g.Uplink()
		}
	}
	b, err := htb.Open(h, closeH, dev, ho)
	if err != nil {
		closeH()
		return nil, err
	}
	return b, nil
}

// Planned is a backend's plan for a set of flows, made without a device.
type Planned struct {
	// Problems are the plan's problems.
	Problems []shaper.Problem
	// Classifier is the classifier kind the plan is for.
	Classifier shaper.ClassifierKind
	// Accounting says which bytes the classes count, one line (with the
	// overhead a device-less plan assumes).
	Accounting string
	render     func(dev string) string
}

// Render returns the plan as the commands an operator would type (tc for
// HTB) on device dev ("" shows DEV); gtpqos itself never runs them.
func (p Planned) Render(dev string) string {
	if p.render == nil {
		return ""
	}
	return p.render(dev)
}

// Plan plans flows under pol with the policy's backend, touching nothing,
// for a device that shapes dir's flows (0: downlink). An auto overhead is
// that of an untagged Ethernet device with an IPv4 N3 tunnel; apply derives
// it from the device.
func Plan(flows []shaper.Flow, pol shaper.Policy, dir shaper.Direction) (Planned, error) {
	if pol.Backend != "" && pol.Backend != htb.Name {
		return Planned{}, fmt.Errorf("unknown backend %q (want %s)", pol.Backend, htb.Name)
	}
	if dir == 0 {
		dir = shaper.Downlink
	}
	over, why := pol.ResolveOverhead(dir, shaper.DefaultEncap)
	if pol.Accounting == shaper.AccountPacket && !pol.Overhead.Fixed {
		why += ", assumed without a device; apply reads it from the device"
	}
	pol.Overhead = shaper.Overhead{Fixed: true, Bytes: over}
	t, probs := htb.Plan(flows, pol, nil)
	p := Planned{Problems: probs, Classifier: pol.Classifier, Accounting: htb.AccountingNote(pol.Accounting, over, why)}
	if t != nil {
		p.Classifier, p.render = t.Classifier, t.TCCommands
		c := htb.ClassifierFor(t.Classifier)
		if t.Classifier == shaper.KindGTPU {
			c = gtpu.New(gtpu.Options{}).Downlink()
		}
		p.Problems = append(p.Problems, htb.UnreachableProblems(t, c)...)
	}
	return p, nil
}
