package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb"
)

func init() {
	register(command{
		name:    "plan",
		summary: "print the HTB tree for a flows file as tc commands, plus problems (changes nothing)",
		run:     runPlan,
	})
}

// loadFlows reads a flows file; direction "" or "all" keeps every flow,
// else only that direction's.
func loadFlows(path, direction string) (shaper.FlowsFile, error) {
	ff, err := shaper.LoadFlowsFile(path)
	if err != nil {
		return ff, err
	}
	if direction != "" && direction != "all" {
		d, err := shaper.ParseDirection(direction)
		if err != nil {
			return ff, usagef("--direction: %v", err)
		}
		ff.Flows = shaper.FilterDirection(ff.Flows, d)
	}
	return ff, nil
}

// planFlows plans a flows file with an optional classifier override and
// the previous (or actual) tree for stable class ids.
func planFlows(ff shaper.FlowsFile, classifier string, prev *htb.Tree) (*htb.Tree, []shaper.Problem, error) {
	pol := ff.Policy
	if classifier != "" {
		k, err := shaper.ParseClassifierKind(classifier)
		if err != nil {
			return nil, nil, usagef("--classifier: %v", err)
		}
		pol.Classifier = k
	}
	t, probs := htb.Plan(ff.Flows, pol, prev)
	return t, probs, nil
}

// loadAndPlan is loadFlows then planFlows.
func loadAndPlan(path, classifier, direction string, prev *htb.Tree) (*htb.Tree, []shaper.Problem, shaper.FlowsFile, error) {
	ff, err := loadFlows(path, direction)
	if err != nil {
		return nil, nil, ff, err
	}
	t, probs, err := planFlows(ff, classifier, prev)
	return t, probs, ff, err
}

func runPlan(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("f", "", "flows file (YAML)")
	dev := fs.String("dev", "", "device name to show in the commands (default DEV)")
	cls := fs.String("classifier", "", "classifier: auto, fw or bpf (default: the file's policy)")
	dir := fs.String("direction", "all", "flows to include: all, downlink or uplink")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos plan -f flows.yaml [--dev IF] [--classifier auto|fw|bpf] [--direction all|downlink|uplink]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return usagef("%v", err)
	}
	if *file == "" {
		return usagef("-f flows.yaml is required")
	}
	t, probs, ff, err := loadAndPlan(*file, *cls, *dir, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s: %d flows, link %s, mode %s, admission %s, classifier %s\n",
		ff.Path, len(ff.Flows), shaper.FormatRate(ff.Policy.LinkRate), ff.Policy.Mode, ff.Policy.Admission, pickKind(t, ff))
	if t != nil {
		fmt.Fprint(stdout, t.TCCommands(*dev))
	}
	for _, p := range probs {
		fmt.Fprintf(stdout, "# problem: %s\n", p)
	}
	if p, bad := shaper.FirstError(probs); bad {
		return p
	}
	return nil
}

func pickKind(t *htb.Tree, ff shaper.FlowsFile) shaper.ClassifierKind {
	if t != nil {
		return t.Classifier
	}
	return ff.Policy.Classifier
}
