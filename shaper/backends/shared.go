package backends

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
)

// Shared is what the backends of one UPF share: the GTP-U classifier,
// whose N3 ingress program marks uplink packets for the N6 tree.
type Shared struct{ gtpu *gtpu.Classifier }

// NewShared returns the shared state for a UPF whose N3 device is n3.
func NewShared(n3 string) *Shared { return &Shared{gtpu: gtpu.New(gtpu.Options{N3: n3})} }

// SetSDF hands the sessions' SDF rules (qosview.SDFRules) to the shared
// GTP-U classifier, which then finds each flow inside a session by its
// PDR's filter; see gtpu.Classifier.SetSDF.
func (s *Shared) SetSDF(rules []shaper.SessionRules) ([]string, error) {
	res, err := s.gtpu.SetSDF(rules)
	return res.Notes, err
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
