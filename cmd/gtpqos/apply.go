package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/shaper/devlock"
)

func init() {
	register(command{
		name:    "apply",
		summary: "make a device's tree match a flows file (prints what changed, or 'in sync')",
		run:     runApply,
	})
}

func runApply(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("f", "", "flows file (YAML)")
	dev := fs.String("dev", "", "device whose egress is shaped")
	force := fs.Bool("force", false, "replace a root qdisc gtpqos did not create")
	cls := fs.String("classifier", "", "classifier: "+backends.Choices("classifier")+" (default: the file's policy, else auto)")
	dir := fs.String("direction", "all", "flows to shape on this device: all, downlink (N3) or uplink (N6)")
	leaf := fs.String("leaf", "", "leaf qdisc: "+backends.Choices("leaf")+" (default: the file's policy, else auto)")
	lockDir := fs.String("lock-dir", devlock.DefaultDir, "directory of the per-device locks every writer (apply, reset, watch) holds while it writes")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos apply -f flows.yaml --dev IF [--force] [--classifier KIND] [--leaf KIND] [--direction all|downlink|uplink] [--lock-dir /run/gtpqos]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (flags go before it; one flows file with -f)", fs.Arg(0))
	}
	if *file == "" {
		return usagef("-f flows.yaml is required")
	}
	if *dev == "" {
		return usagef("--dev IF is required")
	}
	d, all, err := directionFlag(*dir)
	if err != nil {
		return err
	}
	ff, total, err := loadFlows(*file, d, all, *cls, *leaf)
	if err != nil {
		return err
	}
	if len(ff.Flows) == 0 && total > 0 && !*force {
		return fmt.Errorf("--direction %s selects none of the %d flows in %s: applying would take every class off %s (pass --force to do that, or gtpqos reset)", d, total, *file, *dev)
	}
	bo := backends.Options{Backend: ff.Policy.Backend, Force: *force, Policy: &ff.Policy, Direction: d}
	if _, err := backends.Check(ff.Policy, bo); err != nil {
		return usagef("%v", err)
	}
	bo.Writer, bo.LockDir = "apply", *lockDir
	be, err := backends.Open(*dev, bo)
	if err != nil {
		return refusal(*dev, "applied", "a running gtpqos watch manages this device: change its config instead", err)
	}
	defer be.Close()
	rep, err := be.Apply(ctx, ff.Flows, ff.Policy, shaper.ApplyOptions{Strict: true})
	log := logrus.WithField("dev", *dev)
	for _, p := range rep.Problems {
		if p.Severity == shaper.Warning {
			log.Warn(p.Error())
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, selected(len(ff.Flows), total, d, all))
	fmt.Fprintln(stdout, rep.Summary)
	for _, n := range rep.Notes {
		fmt.Fprintln(stdout, "note: "+n)
	}
	printChanges(stdout, rep.Changes)
	return nil
}

// refusal turns a device lock held by another writer into one line saying
// what was not done, who holds the device and what to do instead
// (watchHint when the holder is a watch); other errors pass unchanged.
func refusal(dev, what, watchHint string, err error) error {
	var held *devlock.HeldError
	if !errors.As(err, &held) {
		return err
	}
	hint := "try again when it has finished"
	if held.By.Command == "watch" {
		hint = watchHint
	}
	return fmt.Errorf("dev %s: not %s: %w; %s", dev, what, err, hint)
}

// maxApplyLines bounds the per-class lines apply prints.
const maxApplyLines = 50

// printChanges prints one line per created, changed or deleted class.
func printChanges(w io.Writer, changes []shaper.Change) {
	n := 0
	for _, c := range changes {
		if c.Object != "class" {
			continue
		}
		n++
		if n > maxApplyLines {
			continue
		}
		op := map[string]string{"add": "created", "change": "changed", "delete": "deleted"}[c.Op]
		what := c.Role.String()
		if c.Role == shaper.RoleFlow && c.Name != "" {
			what = "flow " + c.Name
		}
		if c.Op == "delete" || c.Role == 0 {
			fmt.Fprintf(w, "  %s class %s (%s)\n", op, c.Class, what)
			continue
		}
		fmt.Fprintf(w, "  %s class %s (%s): rate %s ceil %s\n", op, c.Class, what, shaper.FormatRate(c.Rate), shaper.FormatRate(c.Ceil))
	}
	if n > maxApplyLines {
		fmt.Fprintf(w, "  ... and %d more class changes\n", n-maxApplyLines)
	}
}
