package backends

import (
	"github.com/free5gc/gtpqos/shaper"
)

// Planned is a backend's plan for a set of flows, made without a device.
type Planned struct {
	// Problems are the plan's problems.
	Problems []shaper.Problem
	// Binding names what binds the plan's packets to their classes (HTB:
	// the classifier kind).
	Binding string
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
	b, err := lookup(pol.Backend)
	if err != nil {
		return Planned{}, err
	}
	if dir == 0 {
		dir = shaper.Downlink
	}
	over, why := pol.ResolveOverhead(dir, shaper.DefaultEncap)
	if pol.Accounting == shaper.AccountPacket && !pol.Overhead.Fixed {
		why += ", assumed without a device; apply reads it from the device"
	}
	pol.Overhead = shaper.Overhead{Fixed: true, Bytes: over}
	return b.plan(flows, pol, dir, why)
}
