package backends

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
)

// Shared is what the backends of one UPF share: the GTP-U classifier,
// whose N3 ingress program marks uplink packets for the N6 tree, and the
// sessions' SDF rules, which it and the edt program on N3 match.
type Shared struct {
	gtpu *gtpu.Classifier

	mu    sync.Mutex
	rules []shaper.SessionRules
	// sdf are the edt backends on N3 by device: their programs match the
	// downlink rules too.
	sdf map[string]sdfTaker
}

// sdfTaker is a backend that matches the sessions' SDF rules itself
// (edtbackend.Backend.SetSDF).
type sdfTaker interface {
	SetSDF(rules []shaper.SessionRules) ([]string, error)
}

// NewShared returns the shared state for a UPF whose N3 device is n3.
func NewShared(n3 string) *Shared {
	return &Shared{gtpu: gtpu.New(gtpu.Options{N3: n3}), sdf: map[string]sdfTaker{}}
}

// SetSDF hands the sessions' SDF rules (qosview.SDFRules) to the shared
// GTP-U classifier, which then finds each flow inside a session by its
// PDR's filter (gtpu.Classifier.SetSDF), and to the edt backends on N3,
// whose program does the same (edtbackend.Backend.SetSDF).
func (s *Shared) SetSDF(rules []shaper.SessionRules) ([]string, error) {
	res, err := s.gtpu.SetSDF(rules)
	notes := res.Notes
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = slices.Clone(rules)
	for _, dev := range slices.Sorted(maps.Keys(s.sdf)) {
		n, e := s.sdf[dev].SetSDF(rules)
		for _, x := range n {
			notes = append(notes, "dev "+dev+": "+x)
		}
		if err == nil && e != nil {
			err = e
		}
	}
	return notes, err
}

// takeSDF registers t, the backend on dev, for the SDF rules: it gets the
// current ones now and every later SetSDF's.
func (s *Shared) takeSDF(dev string, t sdfTaker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sdf[dev] = t
	_, _ = t.SetSDF(s.rules) // stored: the backend has no program yet
}

// Close detaches what the shared classifier attached through h (nil: the
// current network namespace) and releases its objects.
func (s *Shared) Close(h *netlink.Handle) error {
	if s == nil {
		return nil
	}
	if h == nil {
		var err error
		if h, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
			return fmt.Errorf("open netlink: %w", err)
		}
		defer h.Close()
	}
	return s.gtpu.Close(h)
}
