package edtbackend

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/free5gc/gtpqos/shaper"
)

// OrphanMask is the fq leaves' orphan_mask: fq tells forwarded packets
// (and unconnected sockets') flows apart by skb->hash & orphan_mask, and
// its default (1023) would fold the program's per-flow hashes into 1024
// flows.
const OrphanMask = 0xFFFFFFFF

// TCCommands renders the plan as the commands an operator would type on
// dev ("" shows DEV): the tree with tc, the program and its map entries
// as comments (gtpqos loads and writes them itself).
func (p *Plan) TCCommands(dev string) string {
	if dev == "" {
		dev = "DEV"
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	stab := ""
	if p.Overhead > 0 {
		stab = fmt.Sprintf("stab overhead -%d linklayer ethernet ", p.Overhead)
	}
	w("tc qdisc replace dev %s root handle %x: %shtb default %x", dev, Major, stab, MinorDefault)
	for _, c := range p.Classes {
		parent := fmt.Sprintf("%x:", Major)
		if c.Parent != 0 {
			parent = Handle(c.Parent)
		}
		over := ""
		if c.Overhead != 0 {
			over = fmt.Sprintf(" overhead %d", c.Overhead)
		}
		w("tc class replace dev %s parent %s classid %s htb rate %s ceil %s%s burst %s cburst %s quantum %d prio %d  # %s", dev, parent, Handle(c.Minor),
			shaper.FormatRate(c.Rate), shaper.FormatRate(c.Ceil), over, shaper.FormatSize(Burst), shaper.FormatSize(Burst), Quantum, c.Prio, c.Name)
		if c.Minor != MinorLink {
			limits := ""
			if c.FqLimit != 0 || c.FqFlowLimit != 0 {
				l, fl := leafLimits(c)
				limits = fmt.Sprintf(" limit %d flow_limit %d", l, fl)
			}
			w("tc qdisc replace dev %s parent %s handle %x: fq orphan_mask %d%s", dev, Handle(c.Minor), c.Minor, uint32(OrphanMask), limits)
		}
	}
	w("# clsact egress: the edt program (filter %s), maps written by gtpqos:", FilterName)
	for _, id := range slices.Sorted(maps.Keys(p.Sessions)) {
		w("#   session %d: AMBR %s", id, shaper.FormatRate(p.Sessions[id]))
	}
	for _, f := range p.Flows {
		gbr := ""
		if f.Spec.GBR > 0 {
			gbr = " GBR " + shaper.FormatRate(f.Spec.GBR) + " (guaranteed class " + Handle(MinorGuaranteed) + ")"
		}
		sess := ""
		if f.Spec.Session != 0 {
			sess = fmt.Sprintf(" session %d", f.Spec.Session)
		}
		by := fmt.Sprintf("mark %#x", f.Flow.Mark)
		if f.Flow.Mark == 0 {
			by = fmt.Sprintf("GTP-U teid %d qfi %d", f.Flow.TEID, f.Flow.QFI)
		}
		w("#   %s %s: MBR %s%s%s, budget %v  # %s", FlowHandle(f.ID), by, shaper.FormatRate(f.Spec.MBR), gbr, sess, f.Spec.DelayBudget, f.Flow.Label())
	}
	return b.String()
}
