package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
)

func init() {
	register(command{
		name:    "plan",
		summary: "print the tree for a flows file as the commands an operator would type, plus problems (changes nothing)",
		run:     runPlan,
	})
}

// directionFlag parses --direction: "" or "all" keeps every flow, on a
// downlink device; "downlink" or "uplink" (any case, or dl/ul) keeps that
// direction's flows, on a device of that direction.
func directionFlag(s string) (d shaper.Direction, all bool, err error) {
	if s == "" || strings.EqualFold(s, "all") {
		return shaper.Downlink, true, nil
	}
	if d, err = shaper.ParseDirection(s); err != nil {
		return d, false, usagef("--direction: %v", err)
	}
	return d, false, nil
}

// loadFlows reads a flows file, keeping only dir's flows unless all;
// classifier and leaf, when set, override the file's policy. total is how
// many flows the file holds before the direction filter.
func loadFlows(path string, dir shaper.Direction, all bool, classifier, leaf string) (ff shaper.FlowsFile, total int, err error) {
	if ff, err = shaper.LoadFlowsFile(path); err != nil {
		return ff, 0, err
	}
	total = len(ff.Flows)
	if !all {
		ff.Flows = shaper.FilterDirection(ff.Flows, dir)
	}
	ff, err = overridePolicy(ff, classifier, leaf)
	return ff, total, err
}

// selected says how many of the file's flows --direction kept.
func selected(n, total int, dir shaper.Direction, all bool) string {
	if all {
		return fmt.Sprintf("%d flows selected (all directions)", n)
	}
	return fmt.Sprintf("%d of %d flows selected (%s)", n, total, dir)
}

// overridePolicy applies --classifier and --leaf to the file's policy: the
// backend's knobs of those names (errors name the flag).
func overridePolicy(ff shaper.FlowsFile, classifier, leaf string) (shaper.FlowsFile, error) {
	for _, o := range []struct{ knob, v string }{{"classifier", classifier}, {"leaf", leaf}} {
		pol, err := backends.Override(ff.Policy, shaper.Knobs{o.knob: o.v})
		if err != nil {
			return ff, usagef("--%v", err)
		}
		ff.Policy = pol
	}
	return ff, nil
}

func runPlan(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("f", "", "flows file (YAML)")
	dev := fs.String("dev", "", "device name to show in the commands (default DEV)")
	cls := fs.String("classifier", "", "classifier: "+backends.Choices("classifier")+" (default: the file's policy)")
	dir := fs.String("direction", "all", "flows to include: all, downlink or uplink")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos plan -f flows.yaml [--dev IF] [--classifier KIND] [--direction all|downlink|uplink]")
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
	d, all, err := directionFlag(*dir)
	if err != nil {
		return err
	}
	ff, _, err := loadFlows(*file, d, all, *cls, "")
	if err != nil {
		return err
	}
	p, err := backends.Plan(ff.Flows, ff.Policy, d)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s: %d flows, link %s, mode %s, admission %s, classifier %s\n",
		ff.Path, len(ff.Flows), shaper.FormatRate(ff.Policy.LinkRate), ff.Policy.Mode, ff.Policy.Admission, p.Binding)
	fmt.Fprintf(stdout, "# %s\n", p.Accounting)
	fmt.Fprintf(stdout, "# %s: how long a flow's packet may wait in the shaper's queue\n", ff.Policy.DescribeBudgets())
	fmt.Fprint(stdout, p.Render(*dev))
	for _, pr := range p.Problems {
		fmt.Fprintf(stdout, "# problem: %s\n", pr)
	}
	if pr, bad := shaper.FirstError(p.Problems); bad {
		return pr
	}
	return nil
}
