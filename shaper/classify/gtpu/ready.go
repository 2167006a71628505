package gtpu

import "github.com/free5gc/gtpqos/shaper/classify"

// ready fails, before the tree is written, when this process could not
// load the programs: a capability missing, or the verifier refusing them.
// CAP_NET_ADMIN and CAP_BPF are enough: the programs are written so that
// even Debian 12's 6.1 verifier takes them without CAP_PERFMON (see
// bpf/gtpu.c). The programs loaded here are closed again: Sync loads its
// own, sized for the N3 device.
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
	if err != nil {
		return err
	}
	return o.Close()
}
