package backends

import (
	"errors"
	"fmt"
	"maps"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// The HTB backend: an HTB tree per device, with the mark classifiers of
// package shaper/classify or the GTP-U one of shaper/classify/gtpu.
func init() {
	register(backend{name: htb.Name, open: openHTB, plan: planHTB, check: checkHTB, override: overrideHTB, keep: keepHTB, owns: ownsHTB,
		choices: map[string]string{"classifier": "auto, fw, bpf or gtpu", "leaf": "auto, fq_codel or fifo"}})
}

// htbOptions turns o into the HTB backend's options: the classifier and
// leaf o's knobs override, else the classifier o's policy names, and the
// GTP-U classifier where packets carry no mark.
func htbOptions(o Options) (htb.Options, error) {
	ho := htb.Options{Force: o.Force, Incremental: o.Incremental, N3: o.N3, Direction: o.Direction, OnPool: o.OnPool}
	if o.Policy != nil {
		pol, err := plan.PolicyOf(*o.Policy)
		if err != nil {
			return ho, err
		}
		ho.Classifier = pol.Classifier
	}
	if len(o.Knobs) > 0 {
		k, err := plan.DecodeKnobs(o.Knobs, plan.Knobs{})
		if err != nil {
			return ho, err
		}
		if k.Classifier != "" && k.Classifier != classify.KindAuto { // auto: the policy's
			ho.Classifier = k.Classifier
		}
		ho.Leaf = k.Leaf.Kind
	}
	if o.Marks == Unmarked {
		ho.Classifier = classify.KindGTPU
	}
	return ho, nil
}

// openHTB opens the HTB backend on d, with the GTP-U classifier's half
// for o.Direction when it classifies by TEID and QFI.
func openHTB(d Device, o Options) (shaper.Backend, error) {
	ho, err := htbOptions(o)
	if err != nil {
		return nil, err
	}
	ho.NetNS = d.NetNS
	if ho.Classifier == classify.KindGTPU {
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

// checkHTB refuses the GTP-U classifier where packets are marked (it is
// for stock gtp5g) and on an uplink device without the N3 device's
// ingress program, and says which classifier binds the flows.
func checkHTB(pol shaper.Policy, o Options) (string, error) {
	if o.Policy == nil {
		o.Policy = &pol
	}
	ho, err := htbOptions(o)
	if err != nil {
		return "", err
	}
	kind := ho.Classifier
	if kind == "" {
		kind = classify.KindAuto
	}
	switch {
	case kind == classify.KindGTPU && o.Marks == Marked:
		return "", errors.New("classifier gtpu is for stock gtp5g, whose packets carry no mark; these are marked: use auto, fw or bpf")
	case kind == classify.KindGTPU && o.Direction == shaper.Uplink && o.Shared == nil:
		return "", errors.New("classifier gtpu on an uplink device needs the N3 device's ingress program: use gtpqos watch (--n3/--n6)")
	case kind == classify.KindGTPU:
		return "classifier gtpu (TEID and the sessions' SDF rules, from the GTP-U packet)", nil
	}
	return fmt.Sprintf("classifier %s by mark", kind), nil
}

// overrideHTB sets pol's HTB knobs from k, checked.
func overrideHTB(pol shaper.Policy, k shaper.Knobs) (shaper.Policy, error) {
	if _, err := plan.DecodeKnobs(k, plan.DefaultKnobs()); err != nil {
		return pol, err
	}
	merged := maps.Clone(pol.BackendKnobs.Of(htb.Name))
	if merged == nil {
		merged = shaper.Knobs{}
	}
	maps.Copy(merged, k)
	pol.BackendKnobs = pol.BackendKnobs.With(htb.Name, merged)
	return pol, nil
}

// keepHTB gives next running's classifier knob (or none, as running has).
func keepHTB(running, next shaper.Policy) shaper.Policy {
	k := maps.Clone(next.BackendKnobs.Of(htb.Name))
	if k == nil {
		k = shaper.Knobs{}
	}
	delete(k, "classifier")
	if c, ok := running.BackendKnobs.Of(htb.Name)["classifier"]; ok {
		k["classifier"] = c
	}
	next.BackendKnobs = next.BackendKnobs.With(htb.Name, k)
	return next
}

// planHTB plans an HTB tree and renders it as tc commands.
func planHTB(flows []shaper.Flow, sp shaper.Policy, _ shaper.Direction, why string) (Planned, error) {
	pol, err := plan.PolicyOf(sp)
	if err != nil {
		return Planned{}, err
	}
	t, probs := plan.Plan(flows, pol, nil)
	p := Planned{Problems: probs, Binding: string(pol.Classifier), Accounting: htb.AccountingNote(pol.Accounting, pol.Overhead.Bytes, why)}
	if t != nil {
		p.Binding, p.render = string(t.Classifier), t.TCCommands
		c := htb.ClassifierFor(t.Classifier)
		if t.Classifier == classify.KindGTPU {
			c = gtpu.New(gtpu.Options{}).Downlink()
		}
		p.Problems = append(p.Problems, htb.UnreachableProblems(t, c)...)
	}
	return p, nil
}
