package gtpu

import (
	"fmt"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
)

// Attached is what Inspect found on a device: the gtpqos programs on its
// clsact hooks.
type Attached struct {
	// Attachments describe each program for output.
	Attachments []shaper.Attachment
	// Egress is the snapshot of the program on the egress hook (nil if
	// none): gtpu_egress on N3, mark_egress on N6.
	Egress *Snapshot
	// Ingress is the snapshot of gtpu_ingress on N3's ingress hook (nil
	// if none).
	Ingress *Snapshot
}

// Inspect reads the gtpqos programs attached to link's clsact hooks.
func Inspect(h *netlink.Handle, link netlink.Link) (Attached, error) {
	var a Attached
	for _, hook := range []Hook{Egress, Ingress} {
		s, err := ReadAttached(h, link, hook)
		if err != nil {
			return a, err
		}
		if s == nil {
			continue
		}
		if hook == Egress {
			a.Egress = s
		} else {
			a.Ingress = s
		}
		a.Attachments = append(a.Attachments, s.attachment(link.Attrs().Name, hook))
	}
	return a, nil
}

// attachment describes the snapshot's program for output.
func (s *Snapshot) attachment(dev string, hook Hook) shaper.Attachment {
	at := shaper.Attachment{Dev: dev, Hook: hook.String(), Name: s.Filter, ProgramID: s.ProgramID}
	counters := func(c Counters) map[string]uint64 {
		return map[string]uint64{"hit": c.Hit, "miss": c.Miss, "no-qfi": c.NoQFI, "not-gtp": c.NotGTP}
	}
	switch s.Filter {
	case FilterDownlink:
		at.Entries, at.Counters = len(s.Downlink), counters(s.Stats.Downlink)
	case FilterUplinkN3:
		at.Entries, at.Counters = len(s.Uplink), counters(s.Stats.Uplink)
	default:
		at.Entries = len(s.MarkClass)
	}
	return at
}

// Unplaced returns the GTP-U packets the downlink program found no entry
// for (a miss, or no readable QFI), or nil if the snapshot is not of the
// downlink program.
func (s *Snapshot) Unplaced() *uint64 {
	if s == nil || s.Filter != FilterDownlink {
		return nil
	}
	n := s.Stats.Downlink.Miss + s.Stats.Downlink.NoQFI
	return &n
}

// Dangling returns one line per map entry that points at a class under
// root not in classes.
func (s *Snapshot) Dangling(dev string, root uint32, classes map[uint32]bool) []string {
	type ent struct {
		what string
		cls  uint32
	}
	var ents []ent
	for k, cls := range s.Downlink {
		ents = append(ents, ent{k.String(), cls})
	}
	for m, cls := range s.MarkClass {
		ents = append(ents, ent{fmt.Sprintf("mark=%#x", m), cls})
	}
	sort.Slice(ents, func(i, j int) bool {
		return ents[i].cls < ents[j].cls || ents[i].cls == ents[j].cls && ents[i].what < ents[j].what
	})
	var out []string
	for _, e := range ents {
		if e.cls>>16 != root>>16 || classes[e.cls] {
			continue
		}
		out = append(out, fmt.Sprintf("dev %s: gtpu entry %s points at class %s, which does not exist", dev, e.what, classify.Handle(e.cls)))
	}
	return out
}

// View returns the classifier view the egress snapshot belongs to: the
// downlink view for gtpu_egress, the uplink view for mark_egress (n3 names
// the N3 device, whose gtpu_ingress program holds the uplink (TEID, QFI)
// -> mark entries; "" when unknown), nil for anything else.
func (s *Snapshot) View(n3 string) classify.Classifier {
	switch {
	case s == nil:
		return nil
	case s.Filter == FilterDownlink:
		return New(Options{}).Downlink()
	case s.Filter == FilterUplinkN6:
		return New(Options{N3: n3}).Uplink()
	}
	return nil
}

// RemoveAll removes the gtpqos filters from both clsact hooks of link and,
// when gtpqos added the clsact qdisc (its filters' names end in
// ClsactOwnedSuffix) and nothing is left on it, the qdisc. Filters of any
// other name or priority, and a clsact that was there before gtpqos, stay.
// It returns one line per thing removed.
func RemoveAll(h *netlink.Handle, link netlink.Link) ([]string, error) {
	dev := link.Attrs().Name
	hadClsact, err := hasClsact(h, link)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, hook := range []Hook{Egress, Ingress} {
		fs, err := ourFilters(h, link, hook)
		if err != nil {
			return lines, err
		}
		for _, f := range fs {
			a := Attachment{LinkIndex: link.Attrs().Index, LinkName: dev, Hook: hook, Name: f.Name, ProgramID: uint32(f.Id)}
			if err := Detach(h, a); err != nil {
				return lines, fmt.Errorf("dev %s: remove clsact %s filter %s: %w", dev, hook, f.Name, err)
			}
			note := ""
			if BaseName(f.Name) == FilterUplinkN3 {
				note = "; the N6 tree's uplink flows lose their marks and reach its default class"
			}
			lines = append(lines, fmt.Sprintf("dev %s: removed clsact %s filter %s (BPF program %d, GTP-U classifier%s)", dev, hook, f.Name, f.Id, note))
		}
	}
	if hadClsact && len(lines) > 0 {
		still, err := hasClsact(h, link)
		if err != nil {
			return lines, err
		}
		if !still {
			lines = append(lines, fmt.Sprintf("dev %s: removed the clsact qdisc (no filters left on it)", dev))
		}
	}
	return lines, nil
}

// ourFilters lists the gtpqos filters (cls_bpf at FilterPriority named
// NamePrefix+...) on link's clsact hook.
func ourFilters(h *netlink.Handle, link netlink.Link, hook Hook) ([]*netlink.BpfFilter, error) {
	fs, err := h.FilterList(link, hook.parent())
	if err != nil {
		return nil, fmt.Errorf("dev %s: list clsact %s filters: %w", link.Attrs().Name, hook, err)
	}
	var out []*netlink.BpfFilter
	for _, f := range fs {
		bf, ok := f.(*netlink.BpfFilter)
		if ok && f.Attrs().Priority == FilterPriority && strings.HasPrefix(bf.Name, NamePrefix) {
			out = append(out, bf)
		}
	}
	return out, nil
}

// hasClsact reports whether link has a clsact qdisc.
func hasClsact(h *netlink.Handle, link netlink.Link) (bool, error) {
	qs, err := h.QdiscList(link)
	if err != nil {
		return false, fmt.Errorf("dev %s: list qdiscs: %w", link.Attrs().Name, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_CLSACT && q.Type() == "clsact" {
			return true, nil
		}
	}
	return false, nil
}
