package backends

import (
	"errors"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/edtbackend"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// The edt backend: a fixed HTB tree with fq leaves, each flow paced by
// the EDT program of package shaper/edt.
func init() {
	register(backend{name: edtbackend.Name, open: openEDT, plan: planEDT, check: checkEDT, owns: ownsEDT, stale: staleEDT, probe: edtbackend.Probe})
}

// openEDT opens the edt backend on d. On unmarked packets (stock gtp5g)
// the program finds a downlink packet's flow on N3 by its session's SDF
// rules (Shared.SetSDF) and its GTP-U (TEID, QFI); on the uplink device the shared GTP-U classifier's N3 ingress
// program marks each packet before gtp5g decapsulates it, and the
// program on N6 finds it by that mark.
func openEDT(d Device, o Options) (shaper.Backend, error) {
	eo := edtbackend.Options{NetNS: d.NetNS, Force: o.Force, Direction: o.Direction}
	if o.Marks == Unmarked && o.Direction == shaper.Uplink {
		g := gtpu.New(gtpu.Options{N3: o.N3})
		if o.Shared != nil {
			g = o.Shared.gtpu
		}
		eo.Marker = g.UplinkMarker()
	}
	b, err := edtbackend.Open(d.Handle, d.Close, d.Name, eo)
	if err != nil {
		return nil, err
	}
	if o.Marks == Unmarked && o.Direction != shaper.Uplink && o.Shared != nil {
		// On N3 the program matches the sessions' downlink SDF rules.
		o.Shared.takeSDF(d.Name, b)
	}
	return b, nil
}

// checkEDT says how the program finds each packet's flow: by mark, or,
// on unmarked packets, by (TEID, QFI) on N3 and by the N3 ingress
// program's marks on N6 (which needs the N3 device's program: watch).
func checkEDT(_ shaper.Policy, o Options) (string, error) {
	if o.Marks == Unmarked {
		if o.Direction == shaper.Uplink && o.Shared == nil {
			return "", errors.New("edt on an uplink device with unmarked packets needs the N3 device's ingress program: use gtpqos watch (--n3/--n6)")
		}
		return bindingUnmarked, nil
	}
	return bindingMarked, nil
}

const (
	bindingMarked   = "edt program by mark"
	bindingUnmarked = "edt program by SDF rule and GTP-U (TEID, QFI) on N3, by the N3 ingress program's marks on N6"
)

func ownsEDT(d Device) (bool, error) { return edtbackend.Owns(d.Handle, d.NetNS, d.Name) }

func staleEDT(d Device) (bool, error) { return edtbackend.Stale(d.Handle, d.NetNS, d.Name) }

// planEDT plans the edt tree and its map entries.
func planEDT(flows []shaper.Flow, pol shaper.Policy, _ shaper.Direction, why string) (Planned, error) {
	p := edtbackend.MakePlan(flows, pol)
	binding := bindingMarked
	for _, f := range p.Flows {
		if f.Flow.Mark == 0 {
			binding = bindingUnmarked
			break
		}
	}
	out := Planned{Problems: p.Problems, Binding: binding, Accounting: htb.AccountingNote(pol.Accounting, pol.Overhead.Bytes, why)}
	if p.Classes != nil {
		out.render = p.TCCommands
	}
	return out, nil
}
