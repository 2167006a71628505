package shaper

import (
	"fmt"
	"sort"
)

// policyName labels policy-level problems.
const policyName = "policy"

type planner struct {
	pol      Policy
	problems []Problem
	used     [1 << 16]bool
	cursor   int
	claimed  map[uint16]bool
}

func (p *planner) add(sev Severity, kind ProblemKind, f *Flow, field, format string, a ...any) {
	pr := Problem{Kind: kind, Severity: sev, Field: field, Detail: fmt.Sprintf(format, a...), Name: policyName}
	if f != nil {
		pr.Flow = f.ID
		pr.Name = f.Label()
	}
	p.problems = append(p.problems, pr)
}

// checkPolicy validates the policy; false means no tree can be built.
func (p *planner) checkPolicy() bool {
	pol := &p.pol
	ok := true
	rate := func(field string, v uint64) {
		if v < MinRate || v > MaxRate {
			p.add(Error, BadPolicy, nil, field, "rate %s outside %s..%s", FormatRate(v), FormatRate(MinRate), FormatRate(MaxRate))
			ok = false
		}
	}
	rate("link", pol.LinkRate)
	rate("non_gbr_min", pol.NonGBRMin)
	rate("default_rate", pol.DefaultRate)
	if pol.Mode == Static {
		rate("static_rate", pol.StaticRate)
		rate("static_ceil", pol.StaticCeil)
	}
	if pol.Burst == 0 || pol.CBurst == 0 {
		p.add(Error, BadPolicy, nil, "burst", "burst and cburst must be above 0")
		ok = false
	}
	if pol.Prio > 7 {
		p.add(Error, BadPolicy, nil, "prio", "prio %d above 7", pol.Prio)
		ok = false
	}
	if pol.Mode != Aware && pol.Mode != Static {
		p.add(Error, BadPolicy, nil, "mode", "unknown mode %d", pol.Mode)
		ok = false
	}
	if pol.MaxFrame == 0 {
		pol.MaxFrame = DefaultMaxFrame
	}
	if pol.Quantum < pol.MaxFrame {
		if pol.Quantum != 0 {
			p.add(Warning, Clamped, nil, "quantum", "quantum %d below the largest frame %d: using %d", pol.Quantum, pol.MaxFrame, pol.MaxFrame)
		}
		pol.Quantum = pol.MaxFrame
	}
	if pol.Leaf.Kind == "" {
		pol.Leaf.Kind = LeafAuto
	}
	if pol.Leaf.TargetUs != 0 && pol.Leaf.TargetUs != 5000 {
		p.add(Error, BadPolicy, nil, "leaf.target", "fq_codel target %dus unsupported (only the kernel default 5ms)", pol.Leaf.TargetUs)
		ok = false
	}
	if pol.Classifier == "" {
		pol.Classifier = KindAuto
	}
	if !pol.Classifier.Known() {
		p.add(Error, BadPolicy, nil, "classifier", "unknown classifier %q (want auto, fw, bpf or gtpu)", pol.Classifier)
		ok = false
	}
	return ok
}

func badRate(v uint64) bool { return v != 0 && (v < MinRate || v > MaxRate) }

// checkFlow reports the flow's own errors (duplicates are checked later).
func (p *planner) checkFlow(f *Flow) bool {
	ok := true
	if f.QFI > 63 {
		p.add(Error, BadQFI, f, "qfi", "QFI %d above 63", f.QFI)
		ok = false
	}
	for _, r := range []struct {
		field string
		v     uint64
	}{{"gbr", f.GBR}, {"mbr", f.MBR}, {"session_ambr", f.SessionAMBR}} {
		if badRate(r.v) {
			p.add(Error, BadRate, f, r.field, "rate %d bit/s outside %s..%s", r.v, FormatRate(MinRate), FormatRate(MaxRate))
			ok = false
		}
	}
	if f.Mark&^MarkMask != 0 {
		p.add(Error, BadMark, f, "mark", "mark %#x has bits outside the mark field %#x (gtp5g patch: bits 24-31 are not the QoS mark)", f.Mark, MarkMask)
		ok = false
	}
	if !ok {
		return false
	}
	if f.MBR != 0 && f.MBR < f.GBR {
		p.add(Error, MBRBelowGBR, f, "mbr", "MBR %s below GBR %s", FormatRate(f.MBR), FormatRate(f.GBR))
		return false
	}
	if f.Direction != Downlink && f.Direction != Uplink && f.Direction != 0 {
		p.add(Error, BadRate, f, "direction", "unknown direction %d", f.Direction)
		return false
	}
	if p.pol.Mode == Aware && f.GBR > p.pol.LinkRate {
		p.add(Error, GBRAboveLink, f, "gbr", "GBR %s above link rate %s", FormatRate(f.GBR), FormatRate(p.pol.LinkRate))
		return false
	}
	return true
}

// reserve marks a minor used; false if it was taken or is not assignable.
func (p *planner) reserve(m uint16) bool {
	if m < FirstFlowMinor || m > LastFlowMinor || m == OwnedMajor || p.used[m] {
		return false
	}
	p.used[m] = true
	return true
}

// release frees a minor blocked (not yet claimed) in this plan; false if
// it is not in blocked or was claimed already.
func (p *planner) release(m uint16, blocked []uint16) bool {
	for _, b := range blocked {
		if b == m {
			if p.claimed == nil {
				p.claimed = map[uint16]bool{}
			}
			if p.claimed[m] {
				return false
			}
			p.claimed[m] = true
			p.used[m] = false
			return true
		}
	}
	return false
}

// next returns the lowest free minor, or false when none is left.
func (p *planner) next() (uint16, bool) {
	if p.cursor < int(FirstFlowMinor) {
		p.cursor = int(FirstFlowMinor)
	}
	for ; p.cursor <= int(LastFlowMinor); p.cursor++ {
		m := uint16(p.cursor)
		if m != OwnedMajor && !p.used[m] {
			p.used[m] = true
			p.cursor++
			return m, true
		}
	}
	return 0, false
}

// prevIndex finds a flow's class in the previous tree.
type prevIndex struct {
	byID   map[FlowID]Class
	byMark map[uint32]Class
	byTQ   map[[2]uint32]Class
	// sessionBySEID maps SEIDs of session classes (planned trees only).
	sessionBySEID map[uint64]Class
	classes       map[uint16]Class
}

func newPrevIndex(t *Tree) *prevIndex {
	ix := &prevIndex{byID: map[FlowID]Class{}, byMark: map[uint32]Class{}, byTQ: map[[2]uint32]Class{},
		sessionBySEID: map[uint64]Class{}, classes: map[uint16]Class{}}
	if t == nil {
		return ix
	}
	for _, c := range t.Classes {
		ix.classes[c.Minor] = c
		switch c.Role {
		case RoleFlow:
			if c.Flow != (FlowID{}) {
				ix.byID[c.Flow] = c
			}
			if c.Mark != 0 {
				ix.byMark[c.Mark] = c
			}
			if c.TEID != 0 {
				ix.byTQ[[2]uint32{c.TEID, uint32(c.QFI)}] = c
			}
		case RoleSession:
			if c.SEID != 0 {
				ix.sessionBySEID[c.SEID] = c
			}
		}
	}
	return ix
}

func (ix *prevIndex) lookup(f *Flow) (Class, bool) {
	if c, ok := ix.byID[f.ID]; ok {
		return c, true
	}
	if f.Mark != 0 {
		if c, ok := ix.byMark[f.Mark]; ok && c.Flow == (FlowID{}) {
			return c, true
		}
	}
	if f.TEID != 0 {
		if c, ok := ix.byTQ[[2]uint32{f.TEID, uint32(f.QFI)}]; ok && c.Flow == (FlowID{}) {
			return c, true
		}
	}
	return Class{}, false
}

type session struct {
	seid  uint64
	ambr  uint64
	flows []int // indexes into admitted
	minor uint16
	rate  uint64
}

func minU(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

func plan(flows []Flow, pol Policy) (*Tree, []Problem) {
	p := &planner{pol: pol}
	if !p.checkPolicy() {
		return nil, p.problems
	}
	pol = p.pol
	link := pol.LinkRate
	ix := newPrevIndex(pol.Previous)

	// Deterministic order: by flow id, input order among equal ids.
	order := make([]int, len(flows))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := flows[order[a]].ID, flows[order[b]].ID
		if x.SEID != y.SEID {
			return x.SEID < y.SEID
		}
		return x.QERID < y.QERID
	})

	// Validate and drop duplicate ids.
	type cand struct {
		f    Flow
		prev Class
		had  bool
	}
	seen := make(map[FlowID]bool, len(flows))
	cands := make([]cand, 0, len(flows))
	for _, i := range order {
		f := flows[i]
		if seen[f.ID] {
			p.add(Error, DuplicateFlow, &f, "id", "flow %s listed twice", f.ID)
			continue
		}
		seen[f.ID] = true
		if !p.checkFlow(&f) {
			continue
		}
		c := cand{f: f}
		c.prev, c.had = ix.lookup(&f)
		cands = append(cands, c)
	}
	// Admission order: flows that had a class first, so a new flow never
	// pushes out an admitted one.
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].had && !cands[b].had })

	marks := make(map[uint32]FlowID, len(cands))
	teids := make(map[[2]uint32]FlowID, len(cands))
	var gbrSum uint64
	admitted := cands[:0]
	for _, c := range cands {
		f := &c.f
		if f.Mark != 0 {
			if other, dup := marks[f.Mark]; dup {
				p.add(Error, DuplicateMark, f, "mark", "mark %#x already used by flow %s", f.Mark, other)
				continue
			}
		}
		tq := [2]uint32{f.TEID, uint32(f.QFI)}
		if f.TEID != 0 {
			if other, dup := teids[tq]; dup {
				p.add(Error, DuplicateTEID, f, "teid", "TEID %#x QFI %d already used by flow %s", f.TEID, f.QFI, other)
				continue
			}
		}
		if pol.Mode == Aware && f.GBR > 0 && gbrSum+f.GBR > link {
			left := link - gbrSum
			if pol.Admission == Refuse {
				p.add(Error, GBRSumAboveLink, f, "gbr", "GBR %s does not fit: %s of the %s link already guaranteed (admission refuse)",
					FormatRate(f.GBR), FormatRate(gbrSum), FormatRate(link))
				continue
			}
			// Clamp keeps at least the non-GBR minimum (Policy doc).
			if left < pol.NonGBRMin {
				p.add(Error, GBRSumAboveLink, f, "gbr", "GBR %s does not fit: only %s of the %s link left, below the non-GBR minimum %s (admission clamp)",
					FormatRate(f.GBR), FormatRate(left), FormatRate(link), FormatRate(pol.NonGBRMin))
				continue
			}
			p.add(Warning, Clamped, f, "gbr", "GBR %s clamped to %s: %s of the %s link already guaranteed (admission clamp)",
				FormatRate(f.GBR), FormatRate(left), FormatRate(gbrSum), FormatRate(link))
			f.GBR = left
		}
		if f.Mark != 0 {
			marks[f.Mark] = f.ID
		}
		if f.TEID != 0 {
			teids[tq] = f.ID
		}
		gbrSum += f.GBR
		admitted = append(admitted, c)
	}
	// Back to id order for minor assignment and output.
	sort.SliceStable(admitted, func(a, b int) bool {
		x, y := admitted[a].f.ID, admitted[b].f.ID
		if x.SEID != y.SEID {
			return x.SEID < y.SEID
		}
		return x.QERID < y.QERID
	})

	// Sessions: non-GBR flows of a session with an AMBR (aware mode only).
	var sessions []*session
	sessOf := make([]*session, len(admitted))
	if pol.Mode == Aware {
		bySEID := map[uint64]*session{}
		for i := range admitted {
			f := &admitted[i].f
			if f.GBR != 0 || f.SessionAMBR == 0 {
				continue
			}
			s := bySEID[f.ID.SEID]
			if s == nil {
				s = &session{seid: f.ID.SEID, ambr: minU(f.SessionAMBR, link)}
				bySEID[f.ID.SEID] = s
				sessions = append(sessions, s)
			} else if minU(f.SessionAMBR, link) != s.ambr {
				p.add(Warning, AMBRConflict, f, "session_ambr", "session AMBR %s differs from %s given by another flow of seid %d: using %s",
					FormatRate(f.SessionAMBR), FormatRate(s.ambr), f.ID.SEID, FormatRate(s.ambr))
			}
			s.flows = append(s.flows, i)
			sessOf[i] = s
		}
	}

	// Reserve minors kept from the previous tree.
	for i := range admitted {
		if admitted[i].had {
			admitted[i].had = p.reserve(admitted[i].prev.Minor)
		}
	}
	// Block the minors of previous session-like classes for one plan: reused
	// by a flow they would have to be deleted and re-created (they still
	// have children), which costs more than a fresh minor.
	var blocked []uint16
	for _, c := range ix.classes {
		if c.Role == RoleSession && !p.used[c.Minor] && p.reserve(c.Minor) {
			blocked = append(blocked, c.Minor)
		}
	}
	for _, s := range sessions {
		if c, ok := ix.sessionBySEID[s.seid]; ok && p.release(c.Minor, blocked) && p.reserve(c.Minor) {
			s.minor = c.Minor
			continue
		}
		// The kernel's tree does not know SEIDs: reuse the parent the
		// session's flows had, if it was a session-like class.
		for _, i := range s.flows {
			c := admitted[i]
			if !c.had {
				continue
			}
			parent, ok := ix.classes[c.prev.Parent]
			if ok && parent.Role == RoleSession && (parent.SEID == 0 || parent.SEID == s.seid) && p.release(parent.Minor, blocked) && p.reserve(parent.Minor) {
				s.minor = parent.Minor
				break
			}
		}
	}
	for _, s := range sessions {
		if s.minor != 0 {
			continue
		}
		m, ok := p.next()
		if !ok {
			for _, i := range s.flows {
				p.add(Error, TooManyFlows, &admitted[i].f, "id", "no class id left for session %d (max %d classes)", s.seid, MaxClasses)
			}
			s.flows = nil
			continue
		}
		s.minor = m
	}

	t := &Tree{Major: OwnedMajor, DefaultMinor: DefaultMinor, LinkRate: link, Leaf: pol.Leaf, Classifier: pol.Classifier}
	t.Classes = make([]Class, 0, len(admitted)+len(sessions)+2)
	base := Class{Burst: pol.Burst, CBurst: pol.CBurst, Quantum: pol.Quantum}
	lc := base
	lc.Minor, lc.Parent, lc.Role, lc.Rate, lc.Ceil = LinkMinor, 0, RoleLink, link, link
	dc := base
	dc.Minor, dc.Parent, dc.Role, dc.Rate, dc.Ceil, dc.Prio = DefaultMinor, LinkMinor, RoleDefault, minU(pol.DefaultRate, link), link, 7
	t.Classes = append(t.Classes, lc, dc)
	linkSum := dc.Rate

	for i := range admitted {
		c := &admitted[i]
		f := &c.f
		s := sessOf[i]
		if s != nil && s.flows == nil {
			continue // session got no class id
		}
		parent := LinkMinor
		if s != nil {
			parent = s.minor
		}
		var minor uint16
		if c.had && c.prev.Parent == parent {
			minor = c.prev.Minor // reserved above
		} else {
			m, ok := p.next()
			if !ok {
				p.add(Error, TooManyFlows, f, "id", "no class id left (max %d classes)", MaxClasses)
				continue
			}
			minor = m
		}
		fc := base
		fc.Minor, fc.Parent, fc.Role, fc.Prio = minor, parent, RoleFlow, pol.Prio
		fc.Flow, fc.Name, fc.Direction, fc.Mark, fc.TEID, fc.QFI = f.ID, f.Name, f.Direction, f.Mark, f.TEID, f.QFI
		fc.GBR, fc.MBR, fc.SEID = f.GBR, f.MBR, f.ID.SEID
		switch pol.Mode {
		case Static:
			fc.Ceil = minU(pol.StaticCeil, link)
			fc.Rate = minU(pol.StaticRate, fc.Ceil)
		default:
			fc.Ceil = link
			if f.MBR != 0 {
				fc.Ceil = minU(f.MBR, link)
			}
			if s != nil {
				fc.Ceil = minU(fc.Ceil, s.ambr)
			}
			if f.GBR != 0 {
				fc.Rate = f.GBR
			} else {
				fc.Rate = minU(pol.NonGBRMin, fc.Ceil)
			}
		}
		if s != nil {
			s.rate += fc.Rate
		} else {
			linkSum += fc.Rate
		}
		t.Classes = append(t.Classes, fc)
	}
	for _, s := range sessions {
		if s.flows == nil {
			continue
		}
		sc := base
		sc.Minor, sc.Parent, sc.Role, sc.Prio, sc.SEID = s.minor, LinkMinor, RoleSession, pol.Prio, s.seid
		sc.Ceil = s.ambr
		sc.Rate = minU(s.rate, s.ambr)
		linkSum += sc.Rate
		t.Classes = append(t.Classes, sc)
	}
	if linkSum > link {
		p.add(Warning, Oversubscribed, nil, "link", "class rates add up to %s on a %s link: only GBRs are guaranteed, non-GBR minimums and static rates are not",
			FormatRate(linkSum), FormatRate(link))
	}
	t.sortClasses()
	return t, p.problems
}
