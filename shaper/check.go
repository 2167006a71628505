package shaper

import "fmt"

// policyName labels policy-level problems.
const policyName = "policy"

// problems collects Problems as a check or admission runs.
type problems []Problem

// report appends one problem about flow f (nil: the policy).
func (ps *problems) report(sev Severity, kind ProblemKind, f *Flow, field, format string, a ...any) {
	pr := Problem{Kind: kind, Severity: sev, Field: field, Detail: fmt.Sprintf(format, a...), Name: policyName}
	if f != nil {
		pr.Flow = f.ID
		pr.Name = f.Label()
	}
	*ps = append(*ps, pr)
}

// CheckPolicy validates pol and returns it normalised (quantum at least
// MaxFrame, empty kinds made auto). ok is false when no plan can be built
// from it; the problems say why.
func CheckPolicy(pol Policy) (out Policy, ps []Problem, ok bool) {
	var p problems
	ok = true
	rate := func(field string, v uint64) {
		if v < MinRate || v > MaxRate {
			p.report(Error, BadPolicy, nil, field, "rate %s outside %s..%s", FormatRate(v), FormatRate(MinRate), FormatRate(MaxRate))
			ok = false
		}
	}
	rate("link", pol.LinkRate)
	rate("non_gbr_min", pol.NonGBRMin)
	rate("default_rate", pol.DefaultRate)
	if pol.Mode == Static {
		rate("static_rate", pol.StaticRate)
		rate("static_ceil", pol.StaticCeil)
		// FlowRates would cut the rate to the ceil: say so instead.
		if pol.StaticRate > pol.StaticCeil {
			p.report(Error, BadPolicy, nil, "static_rate", "static rate %s above static ceil %s (a class's rate cannot exceed its ceil)",
				FormatRate(pol.StaticRate), FormatRate(pol.StaticCeil))
			ok = false
		}
	}
	if pol.Burst == 0 || pol.CBurst == 0 {
		p.report(Error, BadPolicy, nil, "burst", "burst and cburst must be above 0")
		ok = false
	}
	if pol.Prio > 7 {
		p.report(Error, BadPolicy, nil, "prio", "prio %d above 7", pol.Prio)
		ok = false
	}
	if pol.Mode != Aware && pol.Mode != Static {
		p.report(Error, BadPolicy, nil, "mode", "unknown mode %d", pol.Mode)
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
			p.report(Warning, Clamped, nil, "quantum", "quantum %d below the largest frame %d: using %d", pol.Quantum, pol.MaxFrame, pol.MaxFrame)
		}
		pol.Quantum = pol.MaxFrame
	}
	if ok && !p.policyBuffers(&pol) {
		ok = false
	}
	if pol.Leaf.Kind == "" {
		pol.Leaf.Kind = LeafAuto
	}
	if pol.Leaf.TargetUs != 0 && pol.Leaf.TargetUs != 5000 {
		p.report(Error, BadPolicy, nil, "leaf.target", "fq_codel target %dus unsupported (only the kernel default 5ms)", pol.Leaf.TargetUs)
		ok = false
	}
	if pol.Pool < 0 || pol.Pool > 65518 {
		p.report(Error, BadPolicy, nil, "pool", "pool of %d spare classes outside 0..65518", pol.Pool)
		ok = false
	}
	if pol.Accounting != AccountPacket && pol.Accounting != AccountFrame {
		p.report(Error, BadPolicy, nil, "accounting", "unknown accounting %d", pol.Accounting)
		ok = false
	}
	if pol.Overhead.Fixed && pol.Overhead.Bytes > MaxOverhead {
		p.report(Error, BadPolicy, nil, "overhead", "overhead %d bytes above %d", pol.Overhead.Bytes, MaxOverhead)
		ok = false
	}
	if pol.Classifier == "" {
		pol.Classifier = KindAuto
	}
	if !pol.Classifier.Known() {
		p.report(Error, BadPolicy, nil, "classifier", "unknown classifier %q (want auto, fw, bpf or gtpu)", pol.Classifier)
		ok = false
	}
	return pol, p, ok
}

// policyBuffers checks that the kernel can hold every policy rate's
// bucket (the link class's and the default class's, and the static or
// non-GBR rates every flow class may get).
func (p *problems) policyBuffers(pol *Policy) bool {
	ok := p.checkBuffer(nil, "link", "burst", pol.LinkRate, max(pol.Burst, pol.CBurst))
	ok = p.checkBuffer(nil, "non_gbr_min", "burst", pol.NonGBRMin, pol.Burst) && ok
	ok = p.checkBuffer(nil, "default_rate", "burst", pol.DefaultRate, pol.Burst) && ok
	if pol.Mode == Static {
		ok = p.checkBuffer(nil, "static_rate", "burst", pol.StaticRate, pol.Burst) && ok
		ok = p.checkBuffer(nil, "static_ceil", "cburst", pol.StaticCeil, pol.CBurst) && ok
	}
	return ok
}

func badRate(v uint64) bool { return v != 0 && (v < MinRate || v > MaxRate) }

// CheckFlow returns the flow's own problems (ranges, mark bits, MBR below
// GBR, GBR above the link; duplicates are the Ledger's); ok is false when
// the flow must be left out.
func CheckFlow(f *Flow, pol *Policy) (ps []Problem, ok bool) {
	var p problems
	ok = p.checkFlow(f, pol)
	return p, ok
}

// checkFlow reports the flow's own errors (duplicates are checked during
// admission); false means the flow is left out.
func (p *problems) checkFlow(f *Flow, pol *Policy) bool {
	ok := true
	if f.QFI > 63 {
		p.report(Error, BadQFI, f, "qfi", "QFI %d above 63", f.QFI)
		ok = false
	}
	for _, r := range []struct {
		field string
		v     uint64
	}{{"gbr", f.GBR}, {"mbr", f.MBR}, {"session_ambr", f.SessionAMBR}} {
		if badRate(r.v) {
			p.report(Error, BadRate, f, r.field, "rate %d bit/s outside %s..%s", r.v, FormatRate(MinRate), FormatRate(MaxRate))
			ok = false
		}
	}
	if f.Mark&^MarkMask != 0 {
		p.report(Error, BadMark, f, "mark", "mark %#x has bits outside the mark field %#x (gtp5g patch: bits 24-31 are not the QoS mark)", f.Mark, MarkMask)
		ok = false
	}
	if !ok {
		return false
	}
	if !p.checkBuffer(f, "gbr", "burst", f.GBR, pol.Burst) || !p.checkBuffer(f, "mbr", "cburst", f.MBR, pol.CBurst) ||
		!p.checkBuffer(f, "session_ambr", "cburst", f.SessionAMBR, pol.CBurst) {
		return false
	}
	if f.MBR != 0 && f.MBR < f.GBR {
		p.report(Error, MBRBelowGBR, f, "mbr", "MBR %s below GBR %s", FormatRate(f.MBR), FormatRate(f.GBR))
		return false
	}
	if f.Direction != Downlink && f.Direction != Uplink && f.Direction != 0 {
		p.report(Error, BadRate, f, "direction", "unknown direction %d", f.Direction)
		return false
	}
	if pol.Mode == Aware && f.GBR > pol.LinkRate {
		p.report(Error, GBRAboveLink, f, "gbr", "GBR %s above link rate %s", FormatRate(f.GBR), FormatRate(pol.LinkRate))
		return false
	}
	return true
}
