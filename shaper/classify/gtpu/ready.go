package gtpu

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper/classify"
)

// ready fails, before the tree is written, when this process could not
// load the programs: a capability missing, or the verifier refusing them.
// Debian 12's 6.1 verifier refuses gtpu_egress's pointer arithmetic to a
// process without CAP_PERFMON (its Spectre v1 sanitation); 6.18 does not.
// The programs loaded here are closed again: Sync loads its own, sized for
// the N3 device.
func (c *Classifier) ready() error {
	if err := classify.NeedBPFCaps(); err != nil {
		return err
	}
	c.mu.Lock()
	loaded := c.objs != nil
	c.mu.Unlock()
	if loaded {
		return nil
	}
	o, err := Load(LoadOptions{})
	if err == nil {
		return o.Close()
	}
	if errors.Is(err, unix.EACCES) && !classify.HasCap(unix.CAP_PERFMON) {
		return fmt.Errorf("missing CAP_PERFMON: this kernel's verifier refuses the GTP-U programs without it (%w)", err)
	}
	return err
}
