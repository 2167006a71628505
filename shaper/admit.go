package shaper

import (
	"cmp"
	"slices"
	"strings"
)

// Admission ranks (see Admit).
const (
	// AdmitKept: the flow holds a class and asks for no more GBR than it
	// was given.
	AdmitKept = iota
	// AdmitGrown: the flow holds a class but asks for more GBR (its GBR
	// grew, or admission clamped it).
	AdmitGrown
	// AdmitNew: the flow holds no class.
	AdmitNew
)

// Admitted is what admission lets into a plan.
type Admitted struct {
	// Flows are the admitted flows in FlowID order; a flow clamped by
	// admission carries its reduced GBR.
	Flows []Flow
	// Sessions group the non-GBR flows of sessions with an AMBR (aware
	// mode only): TS 23.501 puts non-GBR flows under the session AMBR and
	// GBR flows outside it.
	Sessions []Session
	// SessionOf maps an index of Flows to its session's index in
	// Sessions, or -1.
	SessionOf []int
	// Problems say what was refused, clamped or adjusted.
	Problems []Problem
}

// Session is one PDU session whose non-GBR flows share its AMBR.
type Session struct {
	// SEID is the session.
	SEID uint64
	// AMBR is the session AMBR for this direction, capped at the link.
	AMBR uint64
	// Flows are indexes into Admitted.Flows.
	Flows []int
}

// CompareFlowID orders flow ids by SEID, then QER id.
func CompareFlowID(a, b FlowID) int {
	if c := cmp.Compare(a.SEID, b.SEID); c != 0 {
		return c
	}
	return cmp.Compare(a.QERID, b.QERID)
}

// Admit checks each flow (ranges, MBR below GBR, GBR above the link,
// marks outside MarkMask), refuses duplicate ids, marks and (TEID, QFI)
// keys, and admits GBR flows while the sum of GBRs fits in the link, in
// aware mode (Policy.Admission says whether a flow that does not fit is
// refused or clamped). Flows are admitted by rank, then FlowID: rank (nil:
// all 0) says how a flow stands, AdmitKept (it holds a class and asks for
// no more GBR than the class was given) before AdmitGrown (it holds a
// class but asks for more) before AdmitNew, so a flow that asks for more,
// or a new one, never pushes out a flow that keeps what it had. pol must
// have passed CheckPolicy; check is the backend's own check of each flow
// (nil: none, see FlowCheck).
func Admit(flows []Flow, pol Policy, rank func(*Flow) int, check FlowCheck) Admitted {
	var p problems
	order := make([]int, len(flows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return CompareFlowID(flows[a].ID, flows[b].ID) })
	type cand struct {
		f    Flow
		rank int
	}
	seen := make(map[FlowID]bool, len(flows))
	cands := make([]cand, 0, len(flows))
	for _, i := range order {
		f := flows[i]
		if seen[f.ID] {
			p.report(Error, DuplicateFlow, &f, "id", "flow %s listed twice", f.ID)
			continue
		}
		seen[f.ID] = true
		if p.checkFlow(&f, &pol, check) {
			c := cand{f: f}
			if rank != nil {
				c.rank = rank(&f)
			}
			cands = append(cands, c)
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.rank, b.rank) })
	led := NewLedger(pol)
	out := Admitted{Flows: make([]Flow, 0, len(cands))}
	for _, c := range cands {
		f, ps, ok := led.Admit(c.f)
		p = append(p, ps...)
		if ok {
			out.Flows = append(out.Flows, f)
		}
	}
	slices.SortStableFunc(out.Flows, func(a, b Flow) int { return CompareFlowID(a.ID, b.ID) })
	out.Sessions, out.SessionOf = groupSessions(out.Flows, pol, &p)
	out.Problems = p
	return out
}

// Ledger is admission's running state: the keys admitted flows use and the
// sum of their GBRs, so that flows can be admitted and released one at a
// time (Admit does it for a whole set; an incremental planner keeps one).
type Ledger struct {
	pol    Policy
	marks  map[uint32]FlowID
	teids  map[[2]uint32]FlowID
	gbrSum uint64
}

// NewLedger returns an empty ledger for pol (which must have passed
// CheckPolicy).
func NewLedger(pol Policy) *Ledger {
	return &Ledger{pol: pol, marks: map[uint32]FlowID{}, teids: map[[2]uint32]FlowID{}}
}

// GBRSum is the sum of the admitted flows' GBRs.
func (a *Ledger) GBRSum() uint64 { return a.gbrSum }

// Admit admits one checked flow (see CheckFlow), possibly with its GBR
// clamped, or says why not: a mark or (TEID, QFI) another admitted flow
// holds, or a GBR that does not fit.
func (a *Ledger) Admit(f Flow) (Flow, []Problem, bool) {
	var p problems
	if f.Mark != 0 {
		if other, dup := a.marks[f.Mark]; dup && other != f.ID {
			p.report(Error, DuplicateMark, &f, "mark", "mark %#x already used by flow %s", f.Mark, other)
			return f, p, false
		}
	}
	tq := [2]uint32{f.TEID, uint32(f.QFI)}
	if f.TEID != 0 {
		if other, dup := a.teids[tq]; dup && other != f.ID {
			p.report(Error, DuplicateTEID, &f, "teid", "TEID %#x QFI %d already used by flow %s", f.TEID, f.QFI, other)
			return f, p, false
		}
	}
	if !a.fitGBR(&f, &p) {
		return f, p, false
	}
	if f.Mark != 0 {
		a.marks[f.Mark] = f.ID
	}
	if f.TEID != 0 {
		a.teids[tq] = f.ID
	}
	a.gbrSum += f.GBR
	return f, p, true
}

// Release gives back what an admitted flow (as Admit returned it) holds.
func (a *Ledger) Release(f Flow) {
	if f.Mark != 0 && a.marks[f.Mark] == f.ID {
		delete(a.marks, f.Mark)
	}
	tq := [2]uint32{f.TEID, uint32(f.QFI)}
	if f.TEID != 0 && a.teids[tq] == f.ID {
		delete(a.teids, tq)
	}
	a.gbrSum -= min(f.GBR, a.gbrSum)
}

// fitGBR applies the admission policy to a GBR flow that would push the sum
// of GBRs above the link: refuse, or clamp to what is left (never below the
// non-GBR minimum).
func (a *Ledger) fitGBR(f *Flow, p *problems) bool {
	link := a.pol.LinkRate
	if a.pol.Mode != Aware || f.GBR == 0 || a.gbrSum+f.GBR <= link {
		return true
	}
	left := link - a.gbrSum
	if a.pol.Admission == Refuse {
		p.report(Error, GBRSumAboveLink, f, "gbr", "GBR %s does not fit: %s of the %s link already guaranteed (admission refuse)",
			FormatRate(f.GBR), FormatRate(a.gbrSum), FormatRate(link))
		return false
	}
	if left < a.pol.NonGBRMin {
		p.report(Error, GBRSumAboveLink, f, "gbr", "GBR %s does not fit: only %s of the %s link left, below the non-GBR minimum %s (admission clamp)",
			FormatRate(f.GBR), FormatRate(left), FormatRate(link), FormatRate(a.pol.NonGBRMin))
		return false
	}
	p.report(Warning, Clamped, f, "gbr", "GBR %s clamped to %s: %s of the %s link already guaranteed (admission clamp)",
		FormatRate(f.GBR), FormatRate(left), FormatRate(a.gbrSum), FormatRate(link))
	f.GBR = left
	return true
}

// groupSessions groups the non-GBR flows of sessions with an AMBR (aware
// mode only), in flow order.
func groupSessions(flows []Flow, pol Policy, p *problems) ([]Session, []int) {
	of := make([]int, len(flows))
	for i := range of {
		of[i] = -1
	}
	if pol.Mode != Aware {
		return nil, of
	}
	var sessions []Session
	bySEID := map[uint64]int{}
	for i := range flows {
		f := &flows[i]
		if f.GBR != 0 || f.SessionAMBR == 0 {
			continue
		}
		ambr := min(f.SessionAMBR, pol.LinkRate)
		s, ok := bySEID[f.ID.SEID]
		if !ok {
			s = len(sessions)
			bySEID[f.ID.SEID] = s
			sessions = append(sessions, Session{SEID: f.ID.SEID, AMBR: ambr})
		} else if ambr != sessions[s].AMBR {
			p.report(Warning, AMBRConflict, f, "session_ambr", "session AMBR %s differs from %s given by another flow of seid %d: using %s",
				FormatRate(f.SessionAMBR), FormatRate(sessions[s].AMBR), f.ID.SEID, FormatRate(sessions[s].AMBR))
		}
		sessions[s].Flows = append(sessions[s].Flows, i)
		of[i] = s
	}
	return sessions, of
}

// FlowRates returns the rate and ceil of a flow's class (bit/s): in aware
// mode rate = GBR (a non-GBR flow: the non-GBR minimum) and ceil = MBR, or
// the link rate without one, capped at the link and at the session AMBR
// (ambr 0: none); in static mode the policy's static rate and ceil.
func (pol Policy) FlowRates(f Flow, ambr uint64) (rate, ceil uint64) {
	link := pol.LinkRate
	if pol.Mode == Static {
		ceil = min(pol.StaticCeil, link)
		return min(pol.StaticRate, ceil), ceil
	}
	ceil = link
	if f.MBR != 0 {
		ceil = min(f.MBR, link)
	}
	if ambr != 0 {
		ceil = min(ceil, ambr)
	}
	if f.GBR != 0 {
		return f.GBR, ceil
	}
	return min(pol.NonGBRMin, ceil), ceil
}

// LinkShare is what the classes directly under the link class ask of its
// rate, by kind: HTB lends only what the link has, so when they add up to
// more than the link, only the GBRs (which admission fits in the link) are
// guaranteed.
type LinkShare struct {
	// GBR is the GBR flows' classes' rates (their GBRs).
	GBR uint64
	// NonGBR is the non-GBR minimums: non-GBR flows' classes and the
	// session classes that hold them.
	NonGBR uint64
	// Static is the static mode's flow rates.
	Static uint64
	// Default is the default class's rate.
	Default uint64
}

// Sum is the total the classes ask of the link.
func (s LinkShare) Sum() uint64 { return s.GBR + s.NonGBR + s.Static + s.Default }

// Add returns s with o's rates added.
func (s LinkShare) Add(o LinkShare) LinkShare {
	return LinkShare{s.GBR + o.GBR, s.NonGBR + o.NonGBR, s.Static + o.Static, s.Default + o.Default}
}

// Sub returns s with o's rates taken off (never below zero).
func (s LinkShare) Sub(o LinkShare) LinkShare {
	sub := func(a, b uint64) uint64 { return a - min(a, b) }
	return LinkShare{sub(s.GBR, o.GBR), sub(s.NonGBR, o.NonGBR), sub(s.Static, o.Static), sub(s.Default, o.Default)}
}

// Oversubscribed returns the warning that the classes' rates add up to more
// than link, naming each part, and whether there is one.
func (s LinkShare) Oversubscribed(link uint64) (Problem, bool) {
	if s.Sum() <= link {
		return Problem{}, false
	}
	var parts []string
	for _, p := range []struct {
		name string
		v    uint64
	}{{"GBRs", s.GBR}, {"non-GBR minimums", s.NonGBR}, {"static rates", s.Static}, {"default class", s.Default}} {
		if p.v != 0 {
			parts = append(parts, p.name+" "+FormatRate(p.v))
		}
	}
	return Problem{Kind: Oversubscribed, Severity: Warning, Name: "policy", Field: "link",
		Detail: "class rates add up to " + FormatRate(s.Sum()) + " (" + strings.Join(parts, " + ") + ") on a " + FormatRate(link) +
			" link: only GBRs are guaranteed, non-GBR minimums, the default class and static rates are not"}, true
}
