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

// FlowProblem is one problem about flow f (nil: the policy), for backends
// that check what the model does not (their own knobs, their kernel's
// limits).
func FlowProblem(sev Severity, kind ProblemKind, f *Flow, field, format string, a ...any) Problem {
	var p problems
	p.report(sev, kind, f, field, format, a...)
	return p[0]
}

// FlowCheck is a backend's own check of one flow (the kernel can hold its
// rates), run by Admit and CheckFlow after the flow's ranges and marks
// check out and before its rates are compared with each other and the
// link; false leaves the flow out, and the problems say why.
type FlowCheck func(f *Flow) ([]Problem, bool)

// CheckPolicy validates the contract-level settings of pol and returns it
// normalised. ok is false when no plan can be built from it; the problems
// say why. A backend checks its own knobs on top (and may add problems
// before these, see the HTB backend's CheckPolicy).
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
	if pol.Mode != Aware && pol.Mode != Static {
		p.report(Error, BadPolicy, nil, "mode", "unknown mode %d", pol.Mode)
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
	if !p.checkBudgets(&pol) {
		ok = false
	}
	return pol, p, ok
}

func badRate(v uint64) bool { return v != 0 && (v < MinRate || v > MaxRate) }

// CheckFlow returns the flow's own problems (ranges, mark bits, the
// backend's check, MBR below GBR, GBR above the link; duplicates are the
// Ledger's); ok is false when the flow must be left out. check may be nil.
func CheckFlow(f *Flow, pol *Policy, check FlowCheck) (ps []Problem, ok bool) {
	var p problems
	ok = p.checkFlow(f, pol, check)
	return p, ok
}

// checkFlow reports the flow's own errors (duplicates are checked during
// admission); false means the flow is left out.
func (p *problems) checkFlow(f *Flow, pol *Policy, check FlowCheck) bool {
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
	if check != nil {
		ps, ok := check(f)
		*p = append(*p, ps...)
		if !ok {
			return false
		}
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
