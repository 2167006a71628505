package plan

import (
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/spec"
)

// problems collects the problems of HTB's own checks.
type problems []shaper.Problem

// report appends one problem about flow f (nil: the policy).
func (ps *problems) report(sev shaper.Severity, kind shaper.ProblemKind, f *shaper.Flow, field, format string, a ...any) {
	*ps = append(*ps, shaper.FlowProblem(sev, kind, f, field, format, a...))
}

// CheckPolicy validates pol (shaper.CheckPolicy, then HTB's knobs) and
// returns it normalised (quantum and buckets at least MaxFrame, empty kinds
// made auto). ok is false when no plan can be built from it; the problems
// say why.
func CheckPolicy(pol Policy) (out Policy, ps []shaper.Problem, ok bool) {
	var cp shaper.Policy
	cp, ps, ok = shaper.CheckPolicy(pol.Policy)
	pol.Policy = cp
	p := problems(ps)
	if pol.Burst == 0 || pol.CBurst == 0 {
		p.report(shaper.Error, shaper.BadPolicy, nil, "burst", "burst and cburst must be above 0")
		ok = false
	}
	if pol.Prio > 7 {
		p.report(shaper.Error, shaper.BadPolicy, nil, "prio", "prio %d above 7", pol.Prio)
		ok = false
	}
	if pol.MaxFrame == 0 {
		pol.MaxFrame = DefaultMaxFrame
	}
	if !p.checkSizes(&pol) {
		ok = false
	}
	if pol.Quantum < pol.MaxFrame {
		if pol.Quantum != 0 {
			p.report(shaper.Warning, shaper.Clamped, nil, "quantum", "quantum %d below the largest frame %d: using %d", pol.Quantum, pol.MaxFrame, pol.MaxFrame)
		}
		pol.Quantum = pol.MaxFrame
	}
	if ok && !p.policyBuffers(&pol) {
		ok = false
	}
	if !p.checkKinds(&pol) {
		ok = false
	}
	return pol, p, ok
}

// checkKinds checks the leaf, the pool and the classifier.
func (p *problems) checkKinds(pol *Policy) bool {
	ok := true
	if pol.Leaf.Kind == "" {
		pol.Leaf.Kind = LeafAuto
	}
	if pol.Leaf.TargetUs != 0 && pol.Leaf.TargetUs != 5000 {
		p.report(shaper.Error, shaper.BadPolicy, nil, "leaf.target", "fq_codel target %dus unsupported (only the kernel default 5ms)", pol.Leaf.TargetUs)
		ok = false
	}
	if pol.Pool < 0 || pol.Pool > 65518 {
		p.report(shaper.Error, shaper.BadPolicy, nil, "pool", "pool of %d spare classes outside 0..65518", pol.Pool)
		ok = false
	}
	if pol.Classifier == "" {
		pol.Classifier = spec.KindAuto
	}
	if !pol.Classifier.Known() {
		p.report(shaper.Error, shaper.BadPolicy, nil, "classifier", "unknown classifier %q (want auto, fw, bpf or gtpu)", pol.Classifier)
		ok = false
	}
	return ok
}

// policyBuffers checks that the kernel can hold every policy rate's
// bucket (the link class's and the default class's, and the static or
// non-GBR rates every flow class may get).
func (p *problems) policyBuffers(pol *Policy) bool {
	ok := p.checkBuffer(nil, "link", "burst", pol.LinkRate, max(pol.Burst, pol.CBurst))
	ok = p.checkBuffer(nil, "non_gbr_min", "burst", pol.NonGBRMin, pol.Burst) && ok
	ok = p.checkBuffer(nil, "default_rate", "burst", pol.DefaultRate, pol.Burst) && ok
	if pol.Mode == shaper.Static {
		ok = p.checkBuffer(nil, "static_rate", "burst", pol.StaticRate, pol.Burst) && ok
		ok = p.checkBuffer(nil, "static_ceil", "cburst", pol.StaticCeil, pol.CBurst) && ok
	}
	return ok
}

// checkSizes validates the policy's sizes against the kernel's fields and
// raises a burst below the largest frame to it (a bucket smaller than a
// frame never lets the frame through at the class's rate).
func (p *problems) checkSizes(pol *Policy) bool {
	ok := true
	if pol.MaxFrame > MaxFrameLimit {
		p.report(shaper.Error, shaper.BadPolicy, nil, "max_frame", "max_frame %s above %s", shaper.FormatSize(pol.MaxFrame), shaper.FormatSize(MaxFrameLimit))
		ok = false
	}
	if pol.Quantum > MaxQuantum {
		p.report(shaper.Error, shaper.BadPolicy, nil, "quantum", "quantum %d above %d (the kernel keeps it in an int)", pol.Quantum, MaxQuantum)
		ok = false
	}
	for _, b := range []struct {
		field string
		v     *uint32
	}{{"burst", &pol.Burst}, {"cburst", &pol.CBurst}} {
		if *b.v != 0 && *b.v < pol.MaxFrame {
			p.report(shaper.Warning, shaper.Clamped, nil, b.field, "%s %s below the largest frame %s: using %s", b.field, shaper.FormatSize(*b.v), shaper.FormatSize(pol.MaxFrame), shaper.FormatSize(pol.MaxFrame))
			*b.v = pol.MaxFrame
		}
	}
	return ok
}

// flowCheck is HTB's own check of a flow (shaper.FlowCheck): the kernel
// must hold its rates' buckets.
func (pol *Policy) flowCheck(f *shaper.Flow) ([]shaper.Problem, bool) {
	var p problems
	ok := p.checkBuffer(f, "gbr", "burst", f.GBR, pol.Burst) && p.checkBuffer(f, "mbr", "cburst", f.MBR, pol.CBurst) &&
		p.checkBuffer(f, "session_ambr", "cburst", f.SessionAMBR, pol.CBurst)
	return p, ok
}

// CheckFlow is shaper.CheckFlow with HTB's check of the flow's buckets.
func CheckFlow(f *shaper.Flow, pol *Policy) ([]shaper.Problem, bool) {
	return shaper.CheckFlow(f, &pol.Policy, pol.flowCheck)
}
