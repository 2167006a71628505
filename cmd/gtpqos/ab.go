package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/free5gc/gtpqos/shaper"

	"github.com/sirupsen/logrus"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/lab/ab"
	"github.com/free5gc/gtpqos/shaper/backends"
)

func init() {
	register(command{
		name:    "ab",
		summary: "A/B experiment: apply arms (flows files) in turn, measure per-flow rates, compare (--lab: in network namespaces)",
		run:     runAB,
	})
}

const abUsage = `usage: gtpqos ab [flags] [NAME=]FLOWS.yaml[,policer=on|off] ...

Runs each arm in turn (A B A B ...), --runs times: applies the arm's tree,
warms up, samples per-class counters over --window and (with --lab) the
receivers' goodput; prints mean ± 95% CI per flow, GBR/MBR compliance and the
aggregate against the payload ceiling, and writes results.json, results.csv,
timeseries.csv and SVG figures to --out.

  sudo gtpqos ab --lab --demo                     # the seed's static vs aware, ~2 minutes
  sudo gtpqos ab --lab --demo --duration 60 --window 10-50 --runs 5   # the seed's protocol
  sudo gtpqos ab --lab --demo --tcp               # the same contracts with TCP
  sudo gtpqos ab --dev eth1 static=s.yaml aware=a.yaml   # a real UPF: counters only
  sudo gtpqos ab --lab --sweep payload=64,128,256,512,1200,1400   # contract error vs packet size,
                                                  # packet and frame accounting side by side (~7 min)

flags:`

// abFlags are ab's flags: the experiment's spec, where results go, and
// --replot.
type abFlags struct {
	ab.Spec
	out, replot string
}

// flagSet defines ab's flags into f.
func (f *abFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("ab", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&f.Lab, "lab", false, "run in a network-namespace lab (user-space UPF and gNB, built-in traffic)")
	fs.BoolVar(&f.Demo, "demo", false, "the seed's arms (examples/seed-static.yaml, seed-aware.yaml), 2 runs of 20 s, window 5-15; in the lab with a 500 ms delay budget (a rate experiment)")
	fs.BoolVar(&f.TCP, "tcp", false, "TCP instead of UDP (lab; same contracts)")
	fs.BoolVar(&f.NoMarks, "no-marks", false, "lab: send every flow with mark 0 (stock gtp5g) and classify by (TEID, QFI) from the GTP-U header")
	fs.IntVar(&f.Runs, "runs", 0, "runs per arm (default 2 with --demo, else 3)")
	fs.StringVar(&f.Duration, "duration", "", "length of one run, seconds or a Go duration (default 20s with --demo, else 60s)")
	fs.StringVar(&f.Window, "window", "", "analysis window FROM-TO in seconds from the start (default 5-15 with --demo, else 10-50)")
	fs.StringVar(&f.Traffic, "traffic", lab.TrafficBuiltin, "lab traffic generator: builtin or iperf3")
	fs.StringVar(&f.out, "out", "out", "output directory")
	fs.StringVar(&f.Dev, "dev", "", "device to shape and measure (without --lab)")
	fs.StringVar(&f.Classifier, "classifier", "", "classifier kind override: "+backends.Choices("classifier"))
	fs.StringVar(&f.Backends, "backend", "", "backend for every arm, or a comma-separated list run side by side (each arm once per backend, named ARM/BACKEND; every output gets a backend column): "+strings.Join(backends.Names(), ", "))
	fs.StringVar(&f.Leaf, "leaf", "", "leaf qdisc override: "+backends.Choices("leaf"))
	fs.StringVar(&f.LabPDRs, "lab-pdrs", "", "lab: YAML file with a 'pdrs:' list (name, seid, qer, ue, dn, ue_port, teid, qfi, mark) instead of the seed's three (docs/lab.md)")
	fs.Float64Var(&f.Tolerance, "tolerance", 0.05, "GBR/MBR compliance tolerance (0.05 = 5%)")
	fs.IntVar(&f.Payload, "payload", lab.DefaultPayload, "UDP payload bytes (lab traffic, and the payload ceiling; 0 = derive from the frame)")
	fs.DurationVar(&f.Pause, "pause", time.Second, "pause between runs")
	fs.StringVar(&f.replot, "replot", "", "re-print the table and re-write the files (into --out) from a results.json; runs nothing")
	fs.StringVar(&f.Sweep, "sweep", "", "lab: payload=N,N,... runs the contract scenarios (MBR offered 2× and 0.99×, GBR next to a greedy flow, the seed's aware arm) at each UDP payload size with packet and frame accounting (runs of 12 s, window 5-11; rate scale 0.1 unless GTPQOS_LAB_RATE_SCALE is set)")
	return fs
}

func runAB(ctx context.Context, args []string, stdout io.Writer) error {
	var f abFlags
	fs := f.flagSet()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, abUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return usagef("%v", err)
	}
	if f.replot != "" {
		return replot(f.replot, f.out, stdout)
	}
	if f.Sweep != "" {
		return abUsageError(runSweep(ctx, f, fs.Args(), stdout))
	}
	return abUsageError(runExperiment(ctx, f, fs.Args(), stdout))
}

// abUsageError makes package ab's errors in what was asked for usage
// errors (exit status 2); other errors pass unchanged.
func abUsageError(err error) error {
	var ue *ab.UsageError
	if errors.As(err, &ue) {
		return usageError{err.Error()}
	}
	return err
}

// abHooks logs what building and removing a target did.
func abHooks(log *logrus.Logger) ab.Hooks {
	return ab.Hooks{
		Progress: log.Infof,
		Failed:   func(step string, err error) { log.WithError(err).Error(step) },
		Note:     func(dev, note string) { log.WithField("dev", dev).Warn(note) },
	}
}

// runExperiment runs the arms and prints the table and the acceptance
// checks.
func runExperiment(ctx context.Context, f abFlags, args []string, stdout io.Writer) error {
	opts, err := f.Options(args)
	if err != nil {
		return err
	}
	log := logrus.StandardLogger()
	opts.Progress = log.Infof
	target, closeTarget, err := ab.OpenTarget(ctx, f.Spec, &opts, abHooks(log))
	if err != nil {
		// refusal rewrites only a held device lock, and only a device
		// target takes one.
		return refusal(f.Dev, "run", "a running gtpqos watch manages this device: stop it for the experiment", err)
	}
	defer closeTarget()
	log.Infof("ab on %s: %d arm(s) × %d run(s) of %v, window %v-%v", target.Describe(), len(opts.Arms), opts.Runs, opts.Duration, opts.WindowStart, opts.WindowEnd)
	res, err := ab.Run(ctx, target, opts)
	if err != nil {
		return err
	}
	if err := ab.WriteTable(stdout, res); err != nil {
		return err
	}
	failed := printAcceptance(stdout, res, f.TCP)
	paths, err := ab.WriteFiles(f.out, res)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(paths, ", "))
	if failed > 0 && !f.TCP {
		return fmt.Errorf("ab: %d acceptance check(s) failed (see above; results in %s)", failed, f.out)
	}
	return nil
}

// printAcceptance prints the seed experiment's acceptance checks (for UDP;
// informational for TCP) and returns how many failed.
func printAcceptance(w io.Writer, res *ab.Results, tcp bool) int {
	checks := ab.SeedAcceptance(res)
	if len(checks) == 0 {
		return 0
	}
	if tcp {
		fmt.Fprintln(w, "\nthe seed's UDP acceptance criteria applied to TCP (informational):")
	} else {
		fmt.Fprintln(w, "\nthe seed experiment's acceptance checks:")
	}
	failed := 0
	for _, c := range checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, c.Name, c.Detail)
	}
	return failed
}

// replot re-renders a results.json: table on stdout, files into out.
func replot(path, out string, stdout io.Writer) error {
	data, err := shaper.ReadBounded(path, 64<<20)
	if err != nil {
		return fmt.Errorf("replot: %w", err)
	}
	var res ab.Results
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("replot %s: %w", path, err)
	}
	if err := ab.WriteTable(stdout, &res); err != nil {
		return err
	}
	paths, err := ab.WriteFiles(out, &res)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(paths, ", "))
	return nil
}
