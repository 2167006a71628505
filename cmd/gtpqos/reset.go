package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/free5gc/gtpqos/shaper"
)

func init() {
	register(command{
		name:    "reset",
		summary: "remove the HTB tree gtpqos owns on a device (nothing else)",
		run:     runReset,
	})
}

func runReset(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("reset", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dev := fs.String("dev", "", "device")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos reset --dev IF")
			return nil
		}
		return usagef("%v", err)
	}
	if *dev == "" {
		return usagef("--dev IF is required")
	}
	h, err := newHandle()
	if err != nil {
		return err
	}
	defer h.Close()
	if err := checkDev(h, *dev); err != nil {
		return err
	}
	rec := shaper.NewReconciler(h, *dev)
	t, err := rec.Actual(ctx)
	if errors.Is(err, shaper.ErrNotOwned) || (err == nil && t == nil) {
		fmt.Fprintf(stdout, "dev %s: no gtpqos tree (nothing removed)\n", *dev)
		return nil
	}
	if err != nil {
		return err
	}
	if err := rec.Reset(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dev %s: removed the gtpqos tree (%d classes)\n", *dev, len(t.Classes))
	return nil
}
