package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
)

func init() {
	register(command{
		name:    "verify",
		summary: "check that traffic reaches its flow classes (reads counters twice; sends nothing)",
		run:     runVerify,
	})
}

func runVerify(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dev := fs.String("dev", "", "device with a gtpqos tree")
	interval := fs.Duration("interval", 2*time.Second, "time between the two counter readings")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos verify --dev IF [--interval 2s]")
			fmt.Fprintln(stdout, "Prints one line per flow class that is not counting while unclassified traffic grows, and per foreign filter under the tree; exit 1 if any. Says so when gtp5g is not loaded.")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *dev == "" {
		return usagef("--dev IF is required")
	}
	if *interval <= 0 {
		return usagef("--interval must be positive")
	}
	be, err := backends.OpenReader(*dev, backends.Options{})
	if err != nil {
		return err
	}
	defer be.Close()
	before, err := be.Inspect(ctx)
	if err != nil {
		return err
	}
	if !before.Owned {
		return fmt.Errorf("dev %s: no gtpqos tree to verify", *dev)
	}
	// The tree is checked either way (a lab or another marker may feed
	// it), but without gtp5g nothing of a UPF's marks or tunnels it.
	if loaded, err := kmod.Host().Loaded(); err == nil && !loaded {
		fmt.Fprintln(stdout, "note: gtp5g module not loaded: no UPF traffic reaches these classes; checking the tree and its counters alone")
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(*interval):
	}
	after, err := be.Inspect(ctx)
	if err != nil {
		return err
	}
	problems, summary := shaper.Verify(before, after, *interval)
	for _, p := range problems {
		fmt.Fprintln(stdout, p)
	}
	fmt.Fprintln(stdout, summary)
	if len(problems) > 0 {
		return fmt.Errorf("dev %s: verify found %d problem(s)", *dev, len(problems))
	}
	return nil
}
