package ab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/shaper"
)

// Spec is an experiment as a caller asks for it, before anything is
// checked or loaded: the settings of gtpqos ab, one field per flag. Errors
// about a field name it by its flag (--window), since that is how the
// person who got it wrong gave it.
type Spec struct {
	// Lab runs in a network-namespace lab; otherwise on the device Dev.
	Lab bool
	Dev string
	// Demo runs the seed's arms (DemoArms) with the seed's shorter
	// protocol when no arms are given.
	Demo bool
	// TCP, NoMarks, Traffic (the generator) and LabPDRs (a PDR file) set
	// up the lab's traffic; on a device the operator drives traffic.
	TCP     bool
	NoMarks bool
	Traffic string
	LabPDRs string
	// Runs per arm (0: the default); Duration ("60" seconds or a Go
	// duration) and Window ("FROM-TO" in whole seconds), "" for the
	// defaults.
	Runs             int
	Duration, Window string
	// Classifier and Leaf override the arms' kinds ("" keeps them).
	Classifier, Leaf string
	// Tolerance, Payload and Pause as in Options.
	Tolerance float64
	Payload   int
	Pause     time.Duration
	// Sweep is a sweep's payload list ("payload=64,128").
	Sweep string
	// Backends is --backend: a backend, or a list to run side by side
	// ("htb,edt"); "" keeps the arms' own.
	Backends string
}

// DemoArms are the seed experiment's two configurations.
var DemoArms = []string{"static=examples/seed-static.yaml", "aware=examples/seed-aware.yaml"}

// demoBudget gives the demo's arms in the lab the rate experiments'
// budget (RateBudget) where their files leave the default: the demo
// reproduces the seed's rates, and a 20 ms leaf cannot cover a stall of
// the user-space stand-ins on a loaded host (HTB then idles and the
// aggregate falls short of the ceiling).
func demoBudget(arms []Arm) {
	for i := range arms {
		if arms[i].Policy.DelayBudget == shaper.DefaultDelayBudget {
			arms[i].Policy.DelayBudget = RateBudget
		}
	}
}

// UsageError is an error in what the caller asked for (a setting's value,
// an arm's spec, settings that do not go together), as opposed to a
// failure while loading or running; a CLI reports it as a usage error.
type UsageError struct{ Msg string }

// Error returns the message, which names the setting at fault.
func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// Options turns the spec and its arm arguments ([NAME=]FILE[,policer=on|off],
// DemoArms with Demo and none given) into the runner's options, loading
// the arms' flows files. The protocol is checked here, before a lab is
// built; whether gtp5g's native policer exists is checked by OpenTarget.
func (s Spec) Options(args []string) (Options, error) {
	o := Options{Runs: 3, Tolerance: s.Tolerance, Payload: s.Payload, TCP: s.TCP, Pause: s.Pause}
	names, err := ParseBackends(s.Backends)
	if err != nil {
		return o, err
	}
	dur, win := "60s", "10-50"
	if s.Demo {
		o.Runs, dur, win = 2, "20s", "5-15"
		if len(args) == 0 {
			args = DemoArms
		}
	}
	if s.Runs != 0 {
		o.Runs = s.Runs
	}
	if o.Duration, o.WindowStart, o.WindowEnd, err = ParseProtocol(or(s.Duration, dur), or(s.Window, win)); err != nil {
		return o, err
	}
	if s.TCP {
		o.Payload = 0
	}
	if s.Lab {
		o.Generator = s.Traffic
	} else if s.TCP || s.Traffic != lab.TrafficBuiltin || s.NoMarks || s.LabPDRs != "" {
		return o, usagef("--tcp, --traffic, --no-marks and --lab-pdrs need --lab (on a device, the operator drives traffic)")
	}
	if len(args) == 0 {
		return o, usagef("no arms: give flows files (NAME=FILE ...) or --demo")
	}
	for _, a := range args {
		arm, err := ParseArm(a)
		if err != nil {
			return o, err
		}
		o.Arms = append(o.Arms, arm)
	}
	if s.Demo && s.Lab && slices.Equal(args, DemoArms) {
		demoBudget(o.Arms)
	}
	o.Arms = WithBackends(o.Arms, names)
	for i := range o.Arms {
		o.Arms[i].Backend = armBackend(o.Arms[i])
	}
	chk := o
	chk.SetPolicer = func(bool) error { return nil }
	if err := chk.Validate(); err != nil {
		return o, usagef("%v", err)
	}
	if s.Lab {
		for _, a := range o.Arms {
			if a.Policer != "" {
				return o, usagef("arm %s: policer=%s: the lab has no gtp5g (its UPF is a user-space stand-in)", a.Name, a.Policer)
			}
		}
	}
	return o, nil
}

// SweepOptions turns the spec into a sweep's protocol. A sweep runs its
// own scenarios in the lab, so it takes no arms and none of the lab's
// traffic settings.
func (s Spec) SweepOptions(args []string) (SweepOptions, error) {
	o := SweepOptions{Tolerance: 0.01, Pause: s.Pause}
	if !s.Lab || s.TCP || s.NoMarks || s.LabPDRs != "" || s.Demo || len(args) > 0 || s.Traffic != lab.TrafficBuiltin {
		return o, usagef("--sweep runs its own scenarios in the lab: give --lab, and no arms, --demo, --tcp, --no-marks, --lab-pdrs or --traffic")
	}
	var err error
	if o.Payloads, err = ParseSweep(s.Sweep); err != nil {
		return o, err
	}
	if o.Backends, err = ParseBackends(s.Backends); err != nil {
		return o, err
	}
	win := or(s.Window, "5-11")
	if o.Duration, o.WindowStart, o.WindowEnd, err = ParseProtocol(or(s.Duration, "12s"), win); err != nil {
		return o, err
	}
	if o.WindowStart < 0 || o.WindowEnd <= o.WindowStart || o.WindowEnd > o.Duration {
		return o, usagef("--window %q: want FROM-TO in whole seconds within --duration", win)
	}
	return o, nil
}

// or returns v, or def when v is empty.
func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// ParseArm parses [NAME=]FILE[,policer=on|off] and loads the flows file.
// The name defaults to the file's base name without extension.
func ParseArm(s string) (Arm, error) {
	var arm Arm
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

// ParseProtocol parses a run's duration ("60" seconds or a Go duration)
// and its analysis window ("FROM-TO", whole seconds).
func ParseProtocol(dur, win string) (d, from, to time.Duration, err error) {
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

// ParseSweep parses a sweep's "payload=64,128,..." (UDP payload bytes,
// each 20..1400).
func ParseSweep(s string) ([]int, error) {
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
