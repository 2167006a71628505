package watch

import (
	"fmt"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/shaper/backends"
)

// The mark mode is module-wide: every UPF on the host (every container
// sharing its kernel) sees the value watch would set. So by default
// (current) watch never writes it and works with what the module holds;
// the other choices are the operator's explicit consent to set it.

// checkMarkModeName refuses a --mark-mode that is neither a mode nor one of
// current, auto and keep.
func checkMarkModeName(name string) error {
	switch name {
	case "current", "auto", "keep":
		return nil
	}
	if _, err := gtpnl.ParseMarkMode(name); err != nil {
		return fmt.Errorf("%v (or current, auto, keep)", err)
	}
	return nil
}

// unmarked reports whether the patched module is left in mark mode off:
// its packets carry no mark, and watch classifies them by TEID and SDF
// rules as on stock gtp5g.
func (d *Daemon) unmarked() bool {
	return d.cfg.MarkMode == "current" && d.startMode == gtpnl.MarkOff
}

// sameMarkMode checks, after gtp5g came back (a reloaded module starts in
// mode off), that the module still runs the mark mode watch classifies by:
// with --mark-mode current watch does not set it again, so it says what to
// do instead.
func (d *Daemon) sameMarkMode(c *gtpnl.Client) error {
	cur, err := c.MarkMode()
	if err != nil {
		return fmt.Errorf("gtp5g mark mode: %w", err)
	}
	if cur != d.startMode {
		return fmt.Errorf("gtp5g mark mode is %s, watch started with %s and classifies by it (--mark-mode current never sets it: it is machine-wide): set it back, or restart watch", cur, d.startMode)
	}
	return nil
}

// chooseMarks records the patched module's mark mode, refuses mode qfi
// where gtp5g's rules would merge flows (before anything is opened or
// written), and decides whether packets carry marks: a patched module left
// in mode off (--mark-mode current) marks nothing, so its packets are
// classified as stock gtp5g's are, with the GTP-U classifier N3 and N6
// share.
func (d *Daemon) chooseMarks(gc *gtpnl.Client, patched bool, feats gtpnl.Features) error {
	if patched {
		m, err := gc.MarkMode()
		if err != nil {
			return fmt.Errorf("gtp5g mark mode: %w", err)
		}
		d.startMode = m
		if err := checkQFIMode(gc, d.cfg.MarkMode, feats); err != nil {
			return err
		}
	}
	d.marks = backends.Marked
	if !patched || d.unmarked() {
		d.marks, d.shared = backends.Unmarked, backends.NewShared(d.cfg.N3)
	}
	return nil
}
