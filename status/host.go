package status

import (
	"errors"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/kmod"
)

// Host reads the running system: sysfs and procfs through kmod, rules and
// the patch's knobs through gtpnl. Close releases its genl client.
type Host struct {
	Mod kmod.Module
	c   *gtpnl.Client
}

// NewHost returns the Source of this machine.
func NewHost() *Host { return &Host{Mod: kmod.Host()} }

// Loaded reports whether gtp5g is loaded.
func (s *Host) Loaded() (bool, error) { return s.Mod.Loaded() }

// Version dials gtp5g and reads its version and features.
func (s *Host) Version() (string, gtpnl.Features, error) {
	c, err := gtpnl.Dial()
	if err != nil {
		return "", 0, err
	}
	s.c = c
	v, err := c.Version()
	if err != nil {
		return "", 0, err
	}
	f, err := c.Features()
	return v, f, err
}

// Families describes gtp5g's generic netlink families.
func (s *Host) Families() []string {
	if s.c == nil {
		return nil
	}
	fams, err := s.c.Families()
	if err != nil {
		return []string{"unknown (" + err.Error() + ")"}
	}
	out := make([]string, 0, len(fams))
	for _, f := range fams {
		out = append(out, f.String())
	}
	return out
}

// MarkMode reads the patch's mark mode (off on stock gtp5g, which never
// marks).
func (s *Host) MarkMode(f gtpnl.Features) (gtpnl.MarkMode, error) {
	if !f.Has(gtpnl.FeatureMarkCtrl) {
		return gtpnl.MarkOff, nil
	}
	return s.c.MarkMode()
}

// Policer reads the native policer switch.
func (s *Host) Policer(f gtpnl.Features) (bool, string, error) { return ReadPolicer(s.c, f, s.Mod) }

// Rules dumps the QERs, PDRs and FARs.
func (s *Host) Rules() ([]gtpnl.QER, []gtpnl.PDR, []gtpnl.FAR, error) {
	qers, err := s.c.QERs()
	if err != nil {
		return nil, nil, nil, err
	}
	pdrs, err := s.c.PDRs()
	if err != nil {
		return nil, nil, nil, err
	}
	fars, err := s.c.FARs()
	if err != nil {
		return nil, nil, nil, err
	}
	return qers, pdrs, fars, nil
}

// Close releases the genl client.
func (s *Host) Close() {
	if s.c != nil {
		_ = s.c.Close()
		s.c = nil
	}
}

// DialPolicer opens a genl client if it can and says which features the
// module has; without one (nil) the /proc knob is used.
func DialPolicer() (*gtpnl.Client, gtpnl.Features) {
	c, err := gtpnl.Dial()
	if err != nil {
		return nil, 0
	}
	f, err := c.Features()
	if err != nil {
		return c, 0
	}
	return c, f
}

// ReadPolicer reads gtp5g's native policer switch over genl when the patch
// offers it, else from /proc/gtp5g/qos (the same switch); it returns which
// path it used.
func ReadPolicer(c *gtpnl.Client, f gtpnl.Features, mod kmod.Module) (bool, string, error) {
	if c != nil && f.Has(gtpnl.FeaturePolicerCtrl) {
		on, err := c.Policer()
		if err == nil || !errors.Is(err, gtpnl.ErrNotSupported) {
			return on, "genl", err
		}
	}
	on, err := mod.Policer()
	return on, mod.PolicerPath(), err
}

// SetPolicer switches the native policer the way ReadPolicer reads it.
func SetPolicer(c *gtpnl.Client, f gtpnl.Features, mod kmod.Module, on bool) error {
	if c != nil && f.Has(gtpnl.FeaturePolicerCtrl) {
		err := c.SetPolicer(on)
		if err == nil || !errors.Is(err, gtpnl.ErrNotSupported) {
			return err
		}
	}
	return mod.SetPolicer(on)
}
