package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/kmod"
)

func init() {
	register(command{
		name:    "policer",
		summary: "switch gtp5g's native MBR policer: on | off | status",
		run:     runPolicer,
	})
}

func runPolicer(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 || (args[0] != "on" && args[0] != "off" && args[0] != "status") {
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, "usage: gtpqos policer on|off|status")
			return nil
		}
		return usagef("want one of on, off, status")
	}
	mod := kmod.Host()
	if ok, err := mod.Loaded(); err != nil {
		return err
	} else if !ok {
		return kmod.ErrNotLoaded
	}
	// The patched module has a genl command for the switch; stock gtp5g
	// only the /proc knob. Both are the same switch.
	c, feats := dialForPolicer()
	if c != nil {
		defer c.Close()
	}
	if args[0] != "status" {
		on := args[0] == "on"
		if err := setPolicer(c, feats, mod, on); err != nil {
			return err
		}
	}
	on, via, err := readPolicer(c, feats, mod)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "native policer: %s (%s)\n", map[bool]string{true: "on", false: "off"}[on], via)
	return nil
}

// dialForPolicer opens a genl client if it can and says which features the
// module has; without one (nil) the /proc knob is used.
func dialForPolicer() (*gtpnl.Client, gtpnl.Features) {
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

// readPolicer reads the switch over genl when the patch offers it, else
// from /proc/gtp5g/qos; it returns which path it used.
func readPolicer(c *gtpnl.Client, f gtpnl.Features, mod kmod.Module) (bool, string, error) {
	if c != nil && f.Has(gtpnl.FeaturePolicerCtrl) {
		on, err := c.Policer()
		if err == nil || !errors.Is(err, gtpnl.ErrNotSupported) {
			return on, "genl", err
		}
	}
	on, err := mod.Policer()
	return on, mod.PolicerPath(), err
}

func setPolicer(c *gtpnl.Client, f gtpnl.Features, mod kmod.Module, on bool) error {
	if c != nil && f.Has(gtpnl.FeaturePolicerCtrl) {
		err := c.SetPolicer(on)
		if err == nil || !errors.Is(err, gtpnl.ErrNotSupported) {
			return err
		}
	}
	return mod.SetPolicer(on)
}
