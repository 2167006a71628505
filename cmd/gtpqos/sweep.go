package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/lab/ab"
)

// sweepScale is the lab's rate scale for a sweep when GTPQOS_LAB_RATE_SCALE
// is not set: the user-space UPF and gNB stand-ins carry the scenarios'
// offered load at 64-byte payloads there.
const sweepScale = 0.1

// parseSweep parses "payload=64,128,...".
func parseSweep(s string) ([]int, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k != "payload" || v == "" {
		return nil, usagef("--sweep %q: want payload=N,N,... (UDP payload bytes)", s)
	}
	var out []int
	for _, x := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || n < 20 || n > 1400 {
			return nil, usagef("--sweep: payload %q: want a whole number of bytes 20..1400", x)
		}
		out = append(out, n)
	}
	return out, nil
}

// sweepOptions turns the flags into a sweep's protocol.
func (f *abFlags) sweepOptions(args []string) (ab.SweepOptions, error) {
	o := ab.SweepOptions{Tolerance: 0.01, Pause: f.pause}
	if !f.lab || f.tcp || f.noMarks || f.labPDRs != "" || f.demo || len(args) > 0 || f.traffic != lab.TrafficBuiltin {
		return o, usagef("--sweep runs its own scenarios in the lab: give --lab, and no arms, --demo, --tcp, --no-marks, --lab-pdrs or --traffic")
	}
	var err error
	if o.Payloads, err = parseSweep(f.sweep); err != nil {
		return o, err
	}
	dur, win := "12s", "5-11"
	if f.duration != "" {
		dur = f.duration
	}
	if f.window != "" {
		win = f.window
	}
	if o.Duration, o.WindowStart, o.WindowEnd, err = parseProtocol(dur, win); err != nil {
		return o, err
	}
	if o.WindowStart < 0 || o.WindowEnd <= o.WindowStart || o.WindowEnd > o.Duration {
		return o, usagef("--window %q: want FROM-TO in whole seconds within --duration", win)
	}
	return o, nil
}

// runSweep runs a lab sweep and prints its table.
func runSweep(ctx context.Context, f abFlags, args []string, stdout io.Writer) error {
	o, err := f.sweepOptions(args)
	if err != nil {
		return err
	}
	log := logrus.StandardLogger()
	o.Progress = func(format string, a ...any) { log.Infof(format, a...) }
	cfg := lab.Config{N3QueueLen: ab.SweepQueueLen}
	if os.Getenv(lab.RateScaleEnv) == "" {
		cfg.RateScale = sweepScale
	}
	l, err := lab.New(cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := l.Close(); err != nil {
			log.WithError(err).Error("lab clean-up")
		}
	}()
	log.Infof("lab up: netns %s, N3 dev %s, rate scale %g", strings.Join(l.Namespaces(), " "), lab.N3Dev, l.Scale())
	t, err := ab.NewLabTarget(l, ab.LabOptions{Generator: lab.TrafficBuiltin})
	if err != nil {
		return err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		if err := t.Close(c); err != nil {
			log.WithError(err).Error("remove the experiment's tree")
		}
	}()
	res, err := ab.Sweep(ctx, t, o)
	if res != nil && len(res.Runs) > 0 {
		if werr := ab.WriteSweepTable(stdout, res); werr != nil {
			return werr
		}
		paths, werr := ab.WriteSweepFiles(f.out, res)
		if werr != nil {
			return werr
		}
		fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(paths, ", "))
	}
	if err != nil {
		return err
	}
	if failed, n := res.Failed("packet"); failed > 0 {
		return fmt.Errorf("ab sweep: %d of %d packet-accounting checks failed (see above; results in %s)", failed, n, f.out)
	}
	return nil
}
