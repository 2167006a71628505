package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
)

func init() {
	register(command{
		name:    "apply",
		summary: "make a device's HTB tree match a flows file (prints what changed, or 'in sync')",
		run:     runApply,
	})
}

// newHandle opens the one netlink handle a command uses.
func newHandle() (*netlink.Handle, error) {
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("open netlink: %w", err)
	}
	return h, nil
}

// checkDev fails with one line when the device is missing or absent.
func checkDev(h *netlink.Handle, dev string) error {
	if dev == "" {
		return usagef("--dev IF is required")
	}
	if _, err := h.LinkByName(dev); err != nil {
		return fmt.Errorf("device %s: %w", dev, err)
	}
	return nil
}

func runApply(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("f", "", "flows file (YAML)")
	dev := fs.String("dev", "", "device whose egress is shaped")
	force := fs.Bool("force", false, "replace a root qdisc gtpqos did not create")
	cls := fs.String("classifier", "", "classifier: auto, fw or bpf (default: the file's policy, else auto)")
	dir := fs.String("direction", "all", "flows to shape on this device: all, downlink (N3) or uplink (N6)")
	leaf := fs.String("leaf", "", "leaf qdisc: auto, fq_codel or fifo (default: the file's policy, else auto)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos apply -f flows.yaml --dev IF [--force] [--classifier auto|fw|bpf] [--leaf auto|fq_codel|fifo] [--direction all|downlink|uplink]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return usagef("%v", err)
	}
	if *file == "" {
		return usagef("-f flows.yaml is required")
	}
	if *dev == "" {
		return usagef("--dev IF is required")
	}
	// Validate the input completely before touching the kernel.
	if _, _, _, err := loadAndPlan(*file, *cls, *dir, nil); err != nil {
		return err
	}
	var opts []shaper.Option
	opts = append(opts, shaper.WithForce(*force))
	if *leaf != "" {
		k, err := shaper.ParseLeafKind(*leaf)
		if err != nil {
			return usagef("--leaf: %v", err)
		}
		opts = append(opts, shaper.WithLeaf(k))
	}
	h, err := newHandle()
	if err != nil {
		return err
	}
	defer h.Close()
	if err := checkDev(h, *dev); err != nil {
		return err
	}
	rec := shaper.NewReconciler(h, *dev, opts...)
	// Keep class ids stable across runs: plan against the kernel's tree.
	prev, err := rec.Actual(ctx)
	if err != nil && !(*force && errors.Is(err, shaper.ErrNotOwned)) {
		return err
	}
	t, probs, _, err := loadAndPlan(*file, *cls, *dir, prev)
	if err != nil {
		return err
	}
	if p, bad := shaper.FirstError(probs); bad {
		return p
	}
	log := logrus.WithField("dev", *dev)
	for _, p := range probs {
		log.WithField("flow", p.Name).Warn(p.Error())
	}
	res, err := rec.Reconcile(ctx, t)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, res.String())
	return nil
}
