package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/shaper/devlock"
)

func init() {
	register(command{
		name:    "reset",
		summary: "remove what gtpqos created on a device: its tree and its classifier filters (nothing else)",
		run:     runReset,
	})
}

func runReset(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("reset", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dev := fs.String("dev", "", "device")
	lockDir := fs.String("lock-dir", devlock.DefaultDir, "directory of the per-device locks every writer (apply, reset, watch) holds while it writes")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos reset --dev IF [--lock-dir /run/gtpqos]")
			fmt.Fprintln(stdout, "Removes the tree gtpqos created (root 6771:, or 6765: with its pinned pacer) and the clsact filters named gtpqos-*; foreign qdiscs and filters stay.")
			return nil
		}
		return usagef("%v", err)
	}
	if *dev == "" {
		return usagef("--dev IF is required")
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	// A running watch would rebuild what reset removes, and another apply
	// or reset would interleave with it: reset holds the device's lock.
	be, err := backends.Open(*dev, backends.Options{Writer: "reset", LockDir: *lockDir})
	if err != nil {
		return refusal(*dev, "reset", "stop it first; with --cleanup-on-exit it removes its trees itself", err)
	}
	defer be.Close()
	lines, err := be.Reset(ctx)
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	return err
}
