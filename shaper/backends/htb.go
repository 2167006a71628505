package backends

import (
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// The HTB backend: an HTB tree per device, with the mark classifiers of
// package shaper/classify or the GTP-U one of shaper/classify/gtpu.
func init() { register(backend{name: htb.Name, open: openHTB, plan: planHTB}) }

// openHTB opens the HTB backend on d, with the GTP-U classifier's half
// for o.Direction when o asks for it.
func openHTB(d Device, o Options) (shaper.Backend, error) {
	ho := htb.Options{Force: o.Force, Classifier: o.Classifier, Leaf: o.Leaf, Incremental: o.Incremental, N3: o.N3,
		Direction: o.Direction, NetNS: d.NetNS, OnPool: o.OnPool}
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
	return htb.Open(d.Handle, d.Close, d.Name, ho)
}

// planHTB plans an HTB tree and renders it as tc commands.
func planHTB(flows []shaper.Flow, pol shaper.Policy, _ shaper.Direction, why string) (Planned, error) {
	t, probs := htb.Plan(flows, pol, nil)
	p := Planned{Problems: probs, Classifier: pol.Classifier, Accounting: htb.AccountingNote(pol.Accounting, pol.Overhead.Bytes, why)}
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
