package gtpubpf

import (
	"fmt"
	"sort"

	"github.com/free5gc/gtpqos/shaper"
)

// downlinkBindings lists the dl_class entries whose class lies under root.
func (o *Objects) downlinkBindings(root uint32) ([]shaper.Binding, error) {
	var out []shaper.Binding
	var k gtpuFlowKey
	var v uint32
	it := o.objs.DlClass.Iterate()
	for it.Next(&k, &v) {
		if minor, ok := minorOf(v, root); ok {
			out = append(out, shaper.Binding{Minor: minor, TEID: k.Teid, QFI: k.Qfi})
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("gtpu bpf: map dl_class: read: %w", err)
	}
	sortBindings(out)
	return out, nil
}

// uplinkBindings joins ul_mark and mark_class: (TEID, QFI) -> mark -> class
// under root. Marks with no (TEID, QFI) entry are listed with TEID/QFI 0.
func (o *Objects) uplinkBindings(root uint32) ([]shaper.Binding, error) {
	byMark := map[uint32]uint32{}
	var mk, cls uint32
	it := o.objs.MarkClass.Iterate()
	for it.Next(&mk, &cls) {
		byMark[mk] = cls
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("gtpu bpf: map mark_class: read: %w", err)
	}
	var out []shaper.Binding
	used := map[uint32]bool{}
	var k gtpuFlowKey
	var mark uint32
	it = o.objs.UlMark.Iterate()
	for it.Next(&k, &mark) {
		if minor, ok := minorOf(byMark[mark], root); ok {
			out = append(out, shaper.Binding{Minor: minor, Mark: mark, TEID: k.Teid, QFI: k.Qfi})
			used[mark] = true
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("gtpu bpf: map ul_mark: read: %w", err)
	}
	for m, cl := range byMark {
		if minor, ok := minorOf(cl, root); ok && !used[m] {
			out = append(out, shaper.Binding{Minor: minor, Mark: m})
		}
	}
	sortBindings(out)
	return out, nil
}

func sortBindings(b []shaper.Binding) {
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
