package main

import (
	"context"
	"fmt"
	"io"

	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/status"
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
	c, feats := status.DialPolicer()
	if c != nil {
		defer c.Close()
	}
	if args[0] != "status" {
		on := args[0] == "on"
		if err := status.SetPolicer(c, feats, mod, on); err != nil {
			return err
		}
	}
	on, via, err := status.ReadPolicer(c, feats, mod)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "native policer: %s (%s)\n", status.OnOff(on), via)
	return nil
}
