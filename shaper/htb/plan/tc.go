package plan

import (
	"fmt"
	"strings"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/spec"
)

// TCCommands returns the tc commands equivalent to the tree on device dev,
// one per line, with '#' comments naming each flow. It is what `gtpqos plan`
// prints; gtpqos itself never runs tc. Filters are shown as fw filters (the
// seed's form) for classifiers fw and auto; for bpf the map entries are
// listed as comments.
func (t *Tree) TCCommands(dev string) string {
	if dev == "" {
		dev = "DEV"
	}
	var b strings.Builder
	b.Grow(400 * (len(t.Classes) + 1)) // a class, its leaf and its filter: ~400 bytes
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("tc qdisc replace dev %s root handle %x: %shtb default %x", dev, t.Major, t.stabArgs(), t.DefaultMinor)
	order := make([]Class, 0, len(t.Classes))
	for _, r := range []shaper.Role{shaper.RoleLink, shaper.RoleDefault, shaper.RoleSession, shaper.RoleFlow, shaper.RoleSpare} {
		for _, c := range t.Classes {
			if c.Role == r {
				order = append(order, c)
			}
		}
	}
	for _, c := range order {
		parent := t.Handle(c.Parent)
		if c.Parent == 0 {
			parent = fmt.Sprintf("%x:", t.Major)
		}
		over := ""
		if c.Overhead != 0 {
			over = fmt.Sprintf(" overhead %d", c.Overhead)
		}
		line := fmt.Sprintf("tc class replace dev %s parent %s classid %s htb rate %s ceil %s%s burst %s cburst %s quantum %d prio %d",
			dev, parent, t.Handle(c.Minor), shaper.FormatRate(c.Rate), shaper.FormatRate(c.Ceil), over, shaper.FormatSize(c.Burst), shaper.FormatSize(c.CBurst), c.Quantum, c.Prio)
		w("%s  # %s", line, classComment(c))
		if c.IsLeaf() {
			if line := renderLeaf(dev, t, c); line != "" {
				w("%s", line)
			}
		}
	}
	switch t.Classifier {
	case spec.KindFw, spec.KindAuto, "":
		for _, c := range t.Classes {
			if c.Role == shaper.RoleFlow && c.Mark != 0 {
				w("tc filter replace dev %s parent %x: protocol all prio %d handle %#x/%#x fw flowid %s  # %s",
					dev, t.Major, spec.FwPrio, c.Mark, shaper.MarkMask, t.Handle(c.Minor), classComment(c))
			}
		}
		if t.Classifier != spec.KindFw {
			w("# classifier auto: fw filters as above where the kernel has cls_fw, else cls_bpf prio %d with the same mark -> class entries in a BPF map", spec.BPFPrio)
		}
	case spec.KindBPF:
		w("# classifier bpf: one cls_bpf direct-action filter on %x: (prio %d) with a BPF hash map mark -> class:", t.Major, spec.BPFPrio)
		for _, c := range t.Classes {
			if c.Role == shaper.RoleFlow && c.Mark != 0 {
				w("#   mark %#x -> %s  (%s)", c.Mark, t.Handle(c.Minor), classComment(c))
			}
		}
	default:
		w("# classifier %s: entries for the flows above are managed by that classifier", t.Classifier)
	}
	return b.String()
}

// stabArgs is the root's size table as tc writes it ("stab overhead -58
// linklayer ethernet "), or "" under frame accounting.
func (t *Tree) stabArgs() string {
	if t.Accounting != shaper.AccountPacket {
		return ""
	}
	return fmt.Sprintf("stab overhead %d linklayer ethernet ", -int64(t.Overhead))
}

// renderLeaf is the tc command for the leaf under class c: auto is shown
// as fq_codel, with a comment on the FIFO fallback and its limit.
func renderLeaf(dev string, t *Tree, c Class) string {
	k := t.Leaf.Kind
	if k == LeafAuto || k == "" {
		fallback := "HTB's pfifo"
		if c.QueueLimit != 0 {
			fallback = fmt.Sprintf("bfifo limit %d, %s", c.QueueLimit, budgetNote(c))
		}
		return renderFQCodel(dev, t, c) + "  # auto: where fq_codel is missing, " + fallback
	}
	switch k {
	case LeafFQCodel:
		return renderFQCodel(dev, t, c)
	case LeafFIFO:
		return renderFIFO(dev, t, c)
	}
	return ""
}

func classComment(c Class) string {
	switch c.Role {
	case shaper.RoleLink:
		return "link"
	case shaper.RoleDefault:
		return "default (unclassified packets)"
	case shaper.RoleSession:
		return fmt.Sprintf("session seid=%d AMBR", c.SEID)
	case shaper.RoleSpare:
		return "spare (idle, kept ready for a new flow)"
	}
	name := c.Name
	if name == "" {
		name = "-"
	}
	s := fmt.Sprintf("flow %s %s qfi=%d", name, c.Flow, c.QFI)
	if c.Mark != 0 {
		s += fmt.Sprintf(" mark=%#x", c.Mark)
	}
	if c.TEID != 0 {
		s += fmt.Sprintf(" teid=%#x", c.TEID)
	}
	s += fmt.Sprintf(" gbr=%s mbr=%s", shaper.FormatRate(c.GBR), shaper.FormatRate(c.MBR))
	return s
}

// fmtUs formats microseconds as tc does: "5ms", "100ms", "250us".
func fmtUs(us uint32) string {
	if us != 0 && us%1000 == 0 {
		return fmt.Sprintf("%dms", us/1000)
	}
	return fmt.Sprintf("%dus", us)
}
