package ab

import (
	"fmt"

	"github.com/free5gc/gtpqos/kmod"
)

// UsePolicer lets the arms switch gtp5g's native policer when the module
// is loaded, and returns a function that puts the switch back as it was.
// An arm that sets the policer where there is none is an error.
func UsePolicer(o *Options) (restore func() error, err error) {
	m := kmod.Host()
	restore = func() error { return nil }
	if was, err := m.Policer(); err == nil {
		o.SetPolicer = m.SetPolicer
		restore = func() error { return m.SetPolicer(was) }
	}
	for _, a := range o.Arms {
		if a.Policer != "" && o.SetPolicer == nil {
			return restore, fmt.Errorf("arm %s: policer=%s, but gtp5g's native policer (%s) is not available: %w", a.Name, a.Policer, m.PolicerPath(), kmod.ErrNotLoaded)
		}
	}
	return restore, nil
}
