package gtpu

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
)

// Snapshot is what the maps of an attached gtpqos program hold, read by
// kernel id: for a process that did not load them ('gtpqos verify', or
// the daemon after a restart).
type Snapshot struct {
	// ProgramID is the attached program's kernel id.
	ProgramID uint32
	// Filter is the filter's name without ClsactOwnedSuffix (FilterDownlink,
	// FilterUplinkN3 or FilterUplinkN6); empty for a snapshot of this
	// process's own maps.
	Filter string
	// Downlink maps (TEID, QFI) to class ids, Uplink (TEID, QFI) to marks.
	Downlink, Uplink map[Key]uint32
	// MarkClass maps marks to class ids (N6).
	MarkClass map[uint32]uint32
	// DefaultClass is the class id unclaimed GTP-U gets on N3 egress.
	DefaultClass uint32
	// Stats are the programs' counters.
	Stats Stats
}

// ReadAttached finds the gtpqos filter on link's clsact hook and reads its
// program's maps. It returns (nil, nil) when no gtpqos filter is there.
func ReadAttached(h *netlink.Handle, link netlink.Link, hook Hook) (*Snapshot, error) {
	f, err := findFilter(h, link, hook)
	if err != nil || f == nil || !strings.HasPrefix(f.Name, NamePrefix) {
		return nil, err
	}
	dev := link.Attrs().Name
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(f.Id))
	if err != nil {
		return nil, fmt.Errorf("dev %s: clsact %s filter %s: open program %d: %w", dev, hook, f.Name, f.Id, err)
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		return nil, fmt.Errorf("dev %s: program %d: info: %w", dev, f.Id, err)
	}
	ids, ok := info.MapIDs()
	if !ok {
		return nil, fmt.Errorf("dev %s: program %d: kernel does not report map ids", dev, f.Id)
	}
	s := &Snapshot{ProgramID: uint32(f.Id), Filter: BaseName(f.Name), Downlink: map[Key]uint32{}, Uplink: map[Key]uint32{}, MarkClass: map[uint32]uint32{}}
	for _, id := range ids {
		if err := s.readMap(id); err != nil {
			return nil, fmt.Errorf("dev %s: program %d: %w", dev, f.Id, err)
		}
	}
	return s, nil
}

func (s *Snapshot) readMap(id ebpf.MapID) error {
	m, err := ebpf.NewMapFromID(id)
	if err != nil {
		return fmt.Errorf("open map %d: %w", id, err)
	}
	defer m.Close()
	return s.read(m)
}

// read adds what map m holds (by its name) to s.
func (s *Snapshot) read(m *ebpf.Map) error {
	info, err := m.Info()
	if err != nil {
		return fmt.Errorf("map info: %w", err)
	}
	var iterErr error
	switch info.Name {
	case "dl_class", "ul_mark":
		dst := s.Downlink
		if info.Name == "ul_mark" {
			dst = s.Uplink
		}
		var k gtpuFlowKey
		var v uint32
		it := m.Iterate()
		for it.Next(&k, &v) {
			dst[Key{TEID: k.Teid, QFI: k.Qfi}] = v
		}
		iterErr = it.Err()
	case "mark_class":
		var k, v uint32
		it := m.Iterate()
		for it.Next(&k, &v) {
			s.MarkClass[k] = v
		}
		iterErr = it.Err()
	case "config":
		var cfg gtpuGtpuConfig
		if err := m.Lookup(uint32(0), &cfg); err != nil {
			return fmt.Errorf("map config: %w", err)
		}
		s.DefaultClass = cfg.DlDefaultClass
	case "stats":
		st, err := readStats(m)
		if err != nil {
			return err
		}
		s.Stats = st
	}
	if iterErr != nil {
		return fmt.Errorf("map %s: read: %w", info.Name, iterErr)
	}
	return nil
}

// Filter names, as Snapshot.Filter reports them.
const (
	// FilterDownlink is gtpu_egress on N3 (Classifier.Downlink).
	FilterDownlink = NamePrefix + "gtpu-egress"
	// FilterUplinkN3 is gtpu_ingress on N3 (Classifier.Uplink).
	FilterUplinkN3 = NamePrefix + "gtpu-ingress"
	// FilterUplinkN6 is mark_egress on N6 (Classifier.Uplink).
	FilterUplinkN6 = NamePrefix + "mark-egress"
)
