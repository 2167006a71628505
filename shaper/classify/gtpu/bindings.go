package gtpu

import (
	"fmt"
	"sort"

	"github.com/cilium/ebpf"

	"github.com/free5gc/gtpqos/shaper/classify"
)

// snapshot reads this process's maps into a Snapshot (no stats), through
// the descriptors it holds: opening them again by id would need
// CAP_SYS_ADMIN.
func (o *Objects) snapshot() (*Snapshot, error) {
	s := &Snapshot{Downlink: map[Key]uint32{}, Uplink: map[Key]uint32{}, MarkClass: map[uint32]uint32{}, DefaultClass: o.dflt}
	for _, m := range []*ebpf.Map{o.objs.DlClass, o.objs.UlMark, o.objs.MarkClass} {
		if err := s.read(m); err != nil {
			return nil, fmt.Errorf("gtpu bpf: %w", err)
		}
	}
	return s, nil
}

// DownlinkBindings lists the Downlink entries whose class lies under root.
func (s *Snapshot) DownlinkBindings(root uint32) []classify.Binding {
	var out []classify.Binding
	for k, v := range s.Downlink {
		if minor, ok := minorOf(v, root); ok {
			out = append(out, classify.Binding{Minor: minor, TEID: k.TEID, QFI: k.QFI})
		}
	}
	sortBindings(out)
	return out
}

// UplinkBindings joins Uplink and MarkClass: (TEID, QFI) -> mark -> class
// under root. Marks no (TEID, QFI) entry uses are listed with TEID/QFI 0.
func (s *Snapshot) UplinkBindings(root uint32) []classify.Binding {
	byMark := s.MarkClass
	var out []classify.Binding
	used := map[uint32]bool{}
	for k, mark := range s.Uplink {
		if minor, ok := minorOf(byMark[mark], root); ok {
			out = append(out, classify.Binding{Minor: minor, Mark: mark, TEID: k.TEID, QFI: k.QFI})
			used[mark] = true
		}
	}
	for m, cl := range byMark {
		if minor, ok := minorOf(cl, root); ok && !used[m] {
			out = append(out, classify.Binding{Minor: minor, Mark: m})
		}
	}
	sortBindings(out)
	return out
}

func sortBindings(b []classify.Binding) {
	sort.Slice(b, func(i, j int) bool {
		if b[i].Minor != b[j].Minor {
			return b[i].Minor < b[j].Minor
		}
		if b[i].TEID != b[j].TEID {
			return b[i].TEID < b[j].TEID
		}
		return b[i].QFI < b[j].QFI
	})
}
