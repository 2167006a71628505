package backends

import (
	"errors"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edtbackend"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// The edt backend: a fixed HTB tree with fq leaves, each flow paced by
// the EDT program of package shaper/edt.
func init() {
	register(backend{name: edtbackend.Name, open: openEDT, plan: planEDT, check: checkEDT, owns: ownsEDT, probe: edtbackend.Probe})
}

func openEDT(d Device, o Options) (shaper.Backend, error) {
	return edtbackend.Open(d.Handle, d.Close, d.Name, edtbackend.Options{NetNS: d.NetNS, Force: o.Force, Direction: o.Direction})
}

// checkEDT refuses unmarked packets: the program finds each packet's flow
// by its mark.
func checkEDT(_ shaper.Policy, o Options) (string, error) {
	if o.Marks == Unmarked {
		return "", errors.New("edt needs the patched gtp5g's marks: this gtp5g marks no packet (stock gtp5g, or the patch in mark mode off)")
	}
	return "edt program by mark", nil
}

func ownsEDT(d Device) (bool, error) { return edtbackend.Owns(d.Handle, d.NetNS, d.Name) }

// planEDT plans the edt tree and its map entries.
func planEDT(flows []shaper.Flow, pol shaper.Policy, _ shaper.Direction, why string) (Planned, error) {
	p := edtbackend.MakePlan(flows, pol)
	out := Planned{Problems: p.Problems, Binding: "edt program by mark", Accounting: htb.AccountingNote(pol.Accounting, pol.Overhead.Bytes, why)}
	if p.Classes != nil {
		out.render = p.TCCommands
	}
	return out, nil
}
