package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/lab/ab"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
)

func init() {
	register(command{
		name:    "ab",
		summary: "A/B experiment: apply arms (flows files) in turn, measure per-flow rates, compare (--lab: in network namespaces)",
		run:     runAB,
	})
}

// Demo arms: the seed experiment's two configurations.
var demoArms = []string{"static=examples/seed-static.yaml", "aware=examples/seed-aware.yaml"}

const abUsage = `usage: gtpqos ab [flags] [NAME=]FLOWS.yaml[,policer=on|off] ...

Runs each arm in turn (A B A B ...), --runs times: applies the arm's HTB tree,
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

type abFlags struct {
	lab, demo, tcp, noMarks, keep bool
	runs                          int
	duration, window, traffic     string
	out, dev, classifier, leaf    string
	labPDRs, replot, sweep        string
	tolerance                     float64
	payload                       int
	pause                         time.Duration
}

// flagSet defines ab's flags into f.
func (f *abFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("ab", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&f.lab, "lab", false, "run in a network-namespace lab (user-space UPF and gNB, built-in traffic)")
	fs.BoolVar(&f.demo, "demo", false, "the seed's arms (examples/seed-static.yaml, seed-aware.yaml), 2 runs of 20 s, window 5-15")
	fs.BoolVar(&f.tcp, "tcp", false, "TCP instead of UDP (lab; same contracts)")
	fs.BoolVar(&f.noMarks, "no-marks", false, "lab: send every flow with mark 0 (stock gtp5g) and classify by (TEID, QFI) with the gtpu BPF classifier")
	fs.IntVar(&f.runs, "runs", 0, "runs per arm (default 2 with --demo, else 3)")
	fs.StringVar(&f.duration, "duration", "", "length of one run, seconds or a Go duration (default 20s with --demo, else 60s)")
	fs.StringVar(&f.window, "window", "", "analysis window FROM-TO in seconds from the start (default 5-15 with --demo, else 10-50)")
	fs.StringVar(&f.traffic, "traffic", lab.TrafficBuiltin, "lab traffic generator: builtin or iperf3")
	fs.StringVar(&f.out, "out", "out", "output directory")
	fs.StringVar(&f.dev, "dev", "", "device to shape and measure (without --lab)")
	fs.StringVar(&f.classifier, "classifier", "", "classifier kind override: auto, fw, bpf")
	fs.StringVar(&f.leaf, "leaf", "", "leaf qdisc override: auto, fq_codel, fifo")
	fs.StringVar(&f.labPDRs, "lab-pdrs", "", "lab: YAML file with a 'pdrs:' list (name, seid, qer, ue, dn, ue_port, teid, qfi, mark) instead of the seed's three (docs/lab.md)")
	fs.Float64Var(&f.tolerance, "tolerance", 0.05, "GBR/MBR compliance tolerance (0.05 = 5%)")
	fs.IntVar(&f.payload, "payload", lab.DefaultPayload, "UDP payload bytes (lab traffic, and the payload ceiling; 0 = derive from the frame)")
	fs.DurationVar(&f.pause, "pause", time.Second, "pause between runs")
	fs.StringVar(&f.replot, "replot", "", "re-print the table and re-write the files (into --out) from a results.json; runs nothing")
	fs.StringVar(&f.sweep, "sweep", "", "lab: payload=N,N,... runs the contract scenarios (MBR offered 2× and 0.99×, GBR next to a greedy flow, the seed's aware arm) at each UDP payload size with packet and frame accounting (runs of 12 s, window 5-11; rate scale 0.1 unless GTPQOS_LAB_RATE_SCALE is set)")
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
	if f.sweep != "" {
		return runSweep(ctx, f, fs.Args(), stdout)
	}
	opts, err := f.options(fs.Args())
	if err != nil {
		return err
	}
	log := logrus.StandardLogger()
	opts.Progress = func(format string, a ...any) { log.Infof(format, a...) }
	target, closeTarget, err := f.target(ctx, &opts, log)
	if err != nil {
		return err
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
	failed := printAcceptance(stdout, res, f.tcp)
	paths, err := ab.WriteFiles(f.out, res)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(paths, ", "))
	if failed > 0 && !f.tcp {
		return fmt.Errorf("ab: %d acceptance check(s) failed (see above; results in %s)", failed, f.out)
	}
	return nil
}

// target builds the lab or the device target the flags ask for; closeAll
// removes what the experiment created (also after Ctrl-C) and restores
// the native policer.
func (f *abFlags) target(ctx context.Context, opts *ab.Options, log *logrus.Logger) (t ab.Target, closeAll func(), err error) {
	var bo backends.Options
	if f.classifier != "" {
		if bo.Classifier, err = shaper.ParseClassifierKind(f.classifier); err != nil {
			return nil, nil, usagef("--classifier: %v", err)
		}
	}
	if f.leaf != "" {
		if bo.Leaf, err = shaper.ParseLeafKind(f.leaf); err != nil {
			return nil, nil, usagef("--leaf: %v", err)
		}
	}
	var undo []func()
	closeAll = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	if f.lab {
		l, err := newLab(*f, log)
		if err != nil {
			return nil, nil, err
		}
		undo = append(undo, func() {
			if err := l.Close(); err != nil {
				log.WithError(err).Error("lab clean-up")
			}
		})
		payload := f.payload
		if f.tcp {
			payload = 0
		}
		if t, err = ab.NewLabTarget(l, ab.LabOptions{TCP: f.tcp, Payload: payload, Generator: f.traffic, Backend: bo, NoMarks: f.noMarks}); err != nil {
			return nil, nil, err
		}
	} else {
		if f.dev == "" {
			return nil, nil, usagef("give --lab, or --dev IFACE to run on a real UPF's device")
		}
		restore, err := ab.UsePolicer(opts)
		undo = append(undo, func() {
			if err := restore(); err != nil {
				log.WithError(err).Error("restore gtp5g native policer")
			}
		})
		if err != nil {
			return nil, nil, err
		}
		// The experiment writes the device's tree: it holds the device's
		// lock like apply, and refuses a device a watch manages.
		bo.Writer = "ab"
		dt, err := ab.NewDeviceTarget(ctx, f.dev, bo)
		if err != nil {
			return nil, nil, refusal(f.dev, "run", "a running gtpqos watch manages this device: stop it for the experiment", err)
		}
		undo = append(undo, func() {
			if dt.Note != "" {
				log.WithField("dev", f.dev).Warn(dt.Note)
			}
		})
		t = dt
	}
	undo = append(undo, func() {
		// Cleanup must run even after ctx is cancelled (Ctrl-C).
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		if err := t.Close(c); err != nil {
			log.WithError(err).Error("remove the experiment's tree")
		}
	})
	return t, closeAll, nil
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

// options turns flags and arm arguments into the runner's options.
func (f *abFlags) options(args []string) (ab.Options, error) {
	o := ab.Options{Runs: 3, Tolerance: f.tolerance, Payload: f.payload, TCP: f.tcp, Pause: f.pause}
	dur, win := "60s", "10-50"
	if f.demo {
		o.Runs, dur, win = 2, "20s", "5-15"
		if len(args) == 0 {
			args = demoArms
		}
	}
	if f.runs != 0 {
		o.Runs = f.runs
	}
	if f.duration != "" {
		dur = f.duration
	}
	if f.window != "" {
		win = f.window
	}
	var err error
	if o.Duration, o.WindowStart, o.WindowEnd, err = parseProtocol(dur, win); err != nil {
		return o, err
	}
	if f.tcp {
		o.Payload = 0
	}
	if f.lab {
		o.Generator = f.traffic
	} else if f.tcp || f.traffic != lab.TrafficBuiltin || f.noMarks || f.labPDRs != "" {
		return o, usagef("--tcp, --traffic, --no-marks and --lab-pdrs need --lab (on a device, the operator drives traffic)")
	}
	if len(args) == 0 {
		return o, usagef("no arms: give flows files (NAME=FILE ...) or --demo")
	}
	for _, s := range args {
		arm, err := parseArm(s)
		if err != nil {
			return o, err
		}
		o.Arms = append(o.Arms, arm)
	}
	// Validate the protocol now (before building a lab); whether the
	// native policer exists is checked where the target is known.
	chk := o
	chk.SetPolicer = func(bool) error { return nil }
	if err := chk.Validate(); err != nil {
		return o, usagef("%v", err)
	}
	if f.lab {
		for _, a := range o.Arms {
			if a.Policer != "" {
				return o, usagef("arm %s: policer=%s: the lab has no gtp5g (its UPF is a user-space stand-in)", a.Name, a.Policer)
			}
		}
	}
	return o, nil
}

// parseArm parses [NAME=]FILE[,policer=on|off] and loads the flows file.
// The name defaults to the file's base name without extension.
func parseArm(s string) (ab.Arm, error) {
	var arm ab.Arm
	spec, opt, _ := strings.Cut(s, ",")
	name, path, named := strings.Cut(spec, "=")
	if !named {
		path, name = spec, ""
	}
	if opt != "" {
		k, v, _ := strings.Cut(opt, "=")
		if k != "policer" || (v != "on" && v != "off") {
			return arm, usagef("arm %q: option %q: want policer=on or policer=off", s, opt)
		}
		arm.Policer = v
	}
	ff, err := shaper.LoadFlowsFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return arm, fmt.Errorf("arm %q: %w (run from the repository root, or give the files' paths)", s, err)
		}
		return arm, fmt.Errorf("arm %q: %w", s, err)
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	arm.Name, arm.Source, arm.Flows, arm.Policy = name, path, ff.Flows, ff.Policy
	return arm, nil
}

// parseProtocol parses a run's duration ("60" seconds or a Go duration)
// and its analysis window ("FROM-TO", whole seconds).
func parseProtocol(dur, win string) (d, from, to time.Duration, err error) {
	if d, err = parseSeconds(dur); err != nil {
		return 0, 0, 0, usagef("--duration %q: %v", dur, err)
	}
	f, t, ok := strings.Cut(win, "-")
	a, err1 := strconv.Atoi(f)
	b, err2 := strconv.Atoi(t)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, 0, usagef("--window %q: want FROM-TO in whole seconds, e.g. 10-50", win)
	}
	return d, time.Duration(a) * time.Second, time.Duration(b) * time.Second, nil
}

// parseSeconds accepts "60" (seconds) or a Go duration ("60s", "1m").
func parseSeconds(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(s)
}

// newLab builds the netns lab the flags ask for.
func newLab(f abFlags, log *logrus.Logger) (*lab.Lab, error) {
	cfg := lab.Config{NoMarks: f.noMarks}
	if f.labPDRs != "" {
		var err error
		if cfg.PDRs, err = lab.LoadPDRs(f.labPDRs); err != nil {
			return nil, err
		}
	}
	l, err := lab.New(cfg)
	if err != nil {
		return nil, err
	}
	log.Infof("lab up: netns %s, N3 dev %s, rate scale %g", strings.Join(l.Namespaces(), " "), lab.N3Dev, l.Scale())
	return l, nil
}

// replot re-renders a results.json: table on stdout, files into out.
func replot(path, out string, stdout io.Writer) error {
	data, err := os.ReadFile(path)
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
