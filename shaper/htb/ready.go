package htb

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper/classify"
)

// checkReady fails, naming what is missing, when this process could not
// install or adopt the built-in classifier of kind k, or the Reconciler's
// own classifier (a capability, a usable BPF pin directory). It is asked
// once per Reconciler and kind.
func (r *Reconciler) checkReady(k classify.Kind) error {
	if !classify.HasCap(unix.CAP_NET_ADMIN) {
		return fmt.Errorf("dev %s: missing CAP_NET_ADMIN (needed for every tc write)", r.dev)
	}
	var c classify.Readier
	var ok bool
	switch {
	case r.opts.Custom != nil: // a custom classifier (gtpu) is asked as well
		k = r.opts.Custom.Kind()
		c, ok = r.opts.Custom.(classify.Readier)
	case k != classify.KindAuto:
		c, ok = r.builtin(k).(classify.Readier)
	}
	if !ok || r.ready[k] {
		return nil
	}
	if err := c.Ready(r.dev); err != nil {
		return fmt.Errorf("dev %s: classifier %s: %w", r.dev, k, err)
	}
	if r.ready == nil {
		r.ready = map[classify.Kind]bool{}
	}
	r.ready[k] = true
	return nil
}

// noRoot reports whether the device has no root qdisc at all (so that a
// root this run creates can go again if the run must stop).
func (r *Reconciler) noRoot(link netlink.Link) bool {
	st, err := r.readQdiscs(link)
	return err == nil && (st.root == nil || st.root.Attrs().Handle == 0)
}

// readyAfterPick checks the classifier auto picked; if the run created
// the root qdisc on a device that had none, the root goes again, so the
// device is left as it was.
func (r *Reconciler) readyAfterPick(u *run, hadNoRoot bool) error {
	err := r.checkReady(u.cls.Kind())
	if err == nil || !u.res.CreatedRoot || !hadNoRoot {
		return err
	}
	if c, cerr := r.tc(u.link); cerr == nil {
		_ = c.do(rootDelReq(u.link.Attrs().Index, rootHandle()))
	}
	return err
}
