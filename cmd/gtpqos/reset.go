package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/watch"
)

func init() {
	register(command{
		name:    "reset",
		summary: "remove what gtpqos created on a device: its HTB tree and its GTP-U classifier filters (nothing else)",
		run:     runReset,
	})
}

func runReset(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("reset", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dev := fs.String("dev", "", "device")
	lockDir := fs.String("lock-dir", watch.DefaultLockDir, "where gtpqos watch keeps its device locks: reset refuses a device a running watch holds")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos reset --dev IF [--lock-dir /run/gtpqos]")
			fmt.Fprintln(stdout, "Removes the HTB tree rooted at 6771: and the clsact filters named gtpqos-* (stock-gtp5g GTP-U classifier); foreign qdiscs and filters stay.")
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
	be, err := backends.Open(*dev, backends.Options{})
	if err != nil {
		return err
	}
	defer be.Close()
	// A running watch would rebuild what reset removes.
	unlock, err := watch.LockIfWatched(*lockDir, *dev, "reset", "stop it first; with --cleanup-on-exit it removes its trees itself")
	if err != nil {
		return err
	}
	defer unlock()
	lines, err := be.Reset(ctx)
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	return err
}
