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
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/free5gc/gtpqos/watch"
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
	lockDir := fs.String("lock-dir", watch.DefaultLockDir, "where gtpqos watch keeps its device locks: apply refuses a device a running watch holds")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos apply -f flows.yaml --dev IF [--force] [--classifier auto|fw|bpf] [--leaf auto|fq_codel|fifo] [--direction all|downlink|uplink] [--lock-dir /run/gtpqos]")
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
	ff, err := loadFlows(*file, *dir)
	if err != nil {
		return err
	}
	if _, probs, err := planFlows(ff, *cls, nil); err != nil {
		return err
	} else if p, bad := shaper.FirstError(probs); bad {
		return p
	}
	var opts []htb.Option
	opts = append(opts, htb.WithForce(*force))
	if *leaf != "" {
		k, err := shaper.ParseLeafKind(*leaf)
		if err != nil {
			return usagef("--leaf: %v", err)
		}
		opts = append(opts, htb.WithLeaf(k))
	}
	h, done, err := openWatchedDev(*dev, *lockDir, "applied", "a running gtpqos watch manages this device: change its config instead")
	if err != nil {
		return err
	}
	defer done()
	rec := htb.NewReconciler(h, *dev, opts...)
	// Keep class ids stable across runs: plan against the kernel's tree.
	prev, err := rec.Actual(ctx)
	if err != nil && !(*force && errors.Is(err, shaper.ErrNotOwned)) {
		return err
	}
	t, probs, err := planFlows(ff, *cls, prev)
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
	printChanges(stdout, res, t, prev)
	return nil
}

// maxApplyLines bounds the per-class lines apply prints.
const maxApplyLines = 50

// printChanges prints one line per created, changed or deleted class.
func printChanges(w io.Writer, res htb.Result, t, prev *htb.Tree) {
	n := 0
	line := func(op string, tr *htb.Tree, minor uint16) {
		n++
		if n > maxApplyLines {
			return
		}
		if tr == nil {
			fmt.Fprintf(w, "  %s class %x:%x\n", op, htb.OwnedMajor, minor)
			return
		}
		c, ok := tr.Find(minor)
		if !ok {
			fmt.Fprintf(w, "  %s class %s\n", op, tr.Handle(minor))
			return
		}
		what := c.Role.String()
		if c.Role == shaper.RoleFlow && c.Name != "" {
			what = "flow " + c.Name
		} else if c.Role == shaper.RoleFlow && c.Mark != 0 {
			what = fmt.Sprintf("flow mark %#x", c.Mark)
		}
		fmt.Fprintf(w, "  %s class %s (%s): rate %s ceil %s\n", op, tr.Handle(minor), what,
			shaper.FormatRate(c.Rate), shaper.FormatRate(c.Ceil))
	}
	for _, m := range res.Created {
		line("created", t, m)
	}
	for _, m := range res.Changed {
		line("changed", t, m)
	}
	for _, m := range res.Deleted {
		line("deleted", prev, m)
	}
	if n > maxApplyLines {
		fmt.Fprintf(w, "  ... and %d more class changes\n", n-maxApplyLines)
	}
}
