package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/watch"
)

func init() {
	register(command{
		name:    "status",
		summary: "show the QoS flows as gtp5g holds them (SEID, QER, QFI, direction, GBR, MBR, mark) and the module's knobs",
		run:     runStatus,
	})
}

// statusClassInfo is what the kernel's tree says about one flow's class.
type statusClassInfo struct {
	// Class is the HTB class id ("6771:10").
	Class string
	// Rate is the class's live rate in bit/s (nil: not measured).
	Rate *uint64
}

// statusFlowKey names a flow in one direction's tree.
type statusFlowKey struct {
	ID        shaper.FlowID
	Direction shaper.Direction
}

// defaultWatchConfig is where status looks for the N3/N6 devices when
// --n3/--n6 are not given.
const defaultWatchConfig = "/etc/gtpqos/watch.yaml"

// statusProblemsPerKind bounds the problems status prints per kind (the
// JSON lists them all).
const statusProblemsPerKind = 5

// statusSource is what status reads; gtp5gStatusSource is the real one.
type statusSource interface {
	loaded() (bool, error)
	version() (string, gtpnl.Features, error)
	markMode(gtpnl.Features) (gtpnl.MarkMode, error)
	policer(gtpnl.Features) (bool, string, error)
	rules() ([]gtpnl.QER, []gtpnl.PDR, []gtpnl.FAR, error)
	close()
}

// statusReport is status's output (also its --json form).
type statusReport struct {
	Version  string       `json:"version"`
	Features []string     `json:"features"`
	Families []string     `json:"families,omitempty"` // gtp5g's genl families (gtpnl.Family)
	MarkMode string       `json:"mark_mode"`
	Policer  string       `json:"policer"`
	Flows    []statusFlow `json:"flows"`
	// Devices are the N3/N6 devices status looked at (none without
	// --n3/--n6 or a watch config).
	Devices []statusDevice `json:"devices"`
	// RateSource says how the RATE column was measured.
	RateSource string   `json:"rate_source,omitempty"`
	Problems   []string `json:"problems"`
	// summary is Problems for people (repeats of one kind collapsed).
	summary []string
}

type statusFlow struct {
	SEID        uint64  `json:"seid"`
	QER         uint32  `json:"qer"`
	QFI         uint8   `json:"qfi"`
	Direction   string  `json:"direction"`
	GBR         uint64  `json:"gbr_bps"`
	MBR         uint64  `json:"mbr_bps"`
	SessionAMBR uint64  `json:"session_ambr_bps"`
	Mark        uint32  `json:"mark"`
	TEID        uint32  `json:"teid"`
	Class       string  `json:"class,omitempty"`
	Rate        *uint64 `json:"rate_bps,omitempty"`
}

func runStatus(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print JSON")
	n3 := fs.String("n3", "", "N3 device with the downlink tree (default: the watch config's n3)")
	n6 := fs.String("n6", "", "N6 device with the uplink tree (default: the watch config's n6)")
	config := fs.String("config", defaultWatchConfig, "watch config file read for n3/n6 when --n3/--n6 are not given (ignored if absent)")
	interval := fs.Duration("interval", time.Second, "time between the two class counter readings for the RATE column (0: no rates)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos status [--json] [--n3 IF] [--n6 IF] [--config FILE] [--interval 1s]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *interval < 0 {
		return usagef("--interval must not be negative")
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	src := &gtp5gStatusSource{mod: kmod.Host()}
	defer src.close()
	// Devices are resolved after gtp5g is found, so that without gtp5g
	// status prints only that.
	var trees statusTrees
	var devProblems []string
	resolve := func() statusTrees {
		d, p := statusDevices(*n3, *n6, *config, explicit)
		devProblems = p
		if d.n3 == "" && d.n6 == "" {
			return nil
		}
		h, err := newHandle()
		if err != nil {
			devProblems = append(devProblems, err.Error())
			return nil
		}
		d.h, d.interval = h, *interval
		trees = d
		return d
	}
	defer func() {
		if nt, ok := trees.(netlinkTrees); ok {
			nt.h.Close()
		}
	}()
	rep, err := collectStatus(ctx, src, resolve)
	if err != nil {
		return err
	}
	rep.Families = src.families()
	if len(devProblems) > 0 {
		rep.Problems = append(devProblems, rep.Problems...)
		rep.summary = append(append([]string(nil), devProblems...), rep.summary...)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	renderStatus(stdout, rep)
	return nil
}

// statusDevices returns the N3/N6 devices: the flags, else the watch
// config's (if the file exists; a missing file named with --config, or one
// that does not load, is a problem, not an error).
func statusDevices(n3, n6, config string, explicit bool) (netlinkTrees, []string) {
	d := netlinkTrees{n3: n3, n6: n6}
	if n3 != "" || n6 != "" || config == "" {
		return d, nil
	}
	if _, err := os.Stat(config); err != nil && !explicit {
		return d, nil
	}
	cfg, err := watch.LoadConfig(config)
	if err != nil {
		return d, []string{fmt.Sprintf("devices: %v (use --n3/--n6)", err)}
	}
	d.n3, d.n6 = cfg.N3, cfg.N6
	return d, nil
}

// collectStatus reads gtp5g and joins its rules into flows; trees (called
// once gtp5g is known to be there; nil or returning nil: no devices) adds
// the class columns and the devices' classification modes.
func collectStatus(ctx context.Context, src statusSource, trees func() statusTrees) (statusReport, error) {
	var rep statusReport
	if ok, err := src.loaded(); err != nil {
		return rep, err
	} else if !ok {
		return rep, kmod.ErrNotLoaded
	}
	v, feats, err := src.version()
	if err != nil {
		return rep, err
	}
	rep.Version = v
	rep.Features = featureNames(feats)
	mode, err := src.markMode(feats)
	if err != nil {
		return rep, err
	}
	rep.MarkMode = mode.String()
	on, via, err := src.policer(feats)
	if err != nil {
		rep.Policer = "unknown (" + err.Error() + ")"
	} else {
		rep.Policer = map[bool]string{true: "on", false: "off"}[on] + " (" + via + ")"
	}
	qers, pdrs, fars, err := src.rules()
	if err != nil {
		return rep, err
	}
	flows, problems := qosview.Build(qers, pdrs, fars, qosview.Options{MarkMode: mode})
	var classes map[statusFlowKey]statusClassInfo
	rep.Devices = []statusDevice{}
	var tr statusTrees
	if trees != nil {
		tr = trees()
	}
	if tr != nil {
		v, err := tr.read(ctx, flows)
		if err != nil {
			return rep, err
		}
		classes, rep.RateSource = v.Classes, v.RateSource
		rep.Problems = append(rep.Problems, v.Problems...)
		if v.Devices != nil {
			rep.Devices = v.Devices
		}
	}
	rep.Flows = make([]statusFlow, 0, len(flows))
	for _, f := range flows {
		sf := statusFlow{SEID: f.ID.SEID, QER: f.ID.QERID, QFI: f.QFI, Direction: f.Direction.String(),
			GBR: f.GBR, MBR: f.MBR, SessionAMBR: f.SessionAMBR, Mark: f.Mark, TEID: f.TEID}
		if ci, ok := classes[statusFlowKey{f.ID, f.Direction}]; ok {
			sf.Class, sf.Rate = ci.Class, ci.Rate
		}
		rep.Flows = append(rep.Flows, sf)
	}
	rep.summary = append(rep.summary, rep.Problems...) // device trouble, if any
	for _, p := range problems {
		rep.Problems = append(rep.Problems, p.String())
	}
	rep.summary = append(rep.summary, qosview.Summarize(problems, statusProblemsPerKind)...)
	if rep.Problems == nil {
		rep.Problems = []string{}
	}
	return rep, nil
}

func featureNames(f gtpnl.Features) []string {
	names := []string{}
	for _, x := range []struct {
		bit  gtpnl.Features
		name string
	}{{gtpnl.FeatureFlowMark, "flow-mark"}, {gtpnl.FeatureQoSEvents, "qos-events"}, {gtpnl.FeaturePolicerCtrl, "policer-ctrl"}, {gtpnl.FeatureMarkCtrl, "mark-ctrl"}} {
		if f.Has(x.bit) {
			names = append(names, x.name)
		}
	}
	return names
}

func renderStatus(w io.Writer, rep statusReport) {
	feats := "none (stock gtp5g)"
	if len(rep.Features) > 0 {
		feats = strings.Join(rep.Features, ",")
	}
	fmt.Fprintf(w, "gtp5g %s  features: %s  mark mode: %s  native policer: %s\n", rep.Version, feats, rep.MarkMode, rep.Policer)
	if len(rep.Families) > 0 {
		fmt.Fprintf(w, "families: %s\n", strings.Join(rep.Families, "; "))
	}
	for _, d := range rep.Devices {
		fmt.Fprintln(w, deviceLine(d))
	}
	if len(rep.Devices) == 0 {
		fmt.Fprintln(w, "devices: none given (--n3/--n6 or n3/n6 in the watch config): no CLASS/RATE columns")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEID\tQER\tQFI\tDIR\tGBR\tMBR\tAMBR\tMARK\tTEID\tCLASS\tRATE")
	dash := func(v uint64, s string) string {
		if v == 0 {
			return "-"
		}
		return s
	}
	for _, f := range rep.Flows {
		class := f.Class
		if class == "" {
			class = "-"
		}
		rate := "-"
		if f.Rate != nil {
			rate = formatLiveRate(*f.Rate)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", f.SEID, f.QER, f.QFI, f.Direction,
			dash(f.GBR, shaper.FormatRate(f.GBR)), dash(f.MBR, shaper.FormatRate(f.MBR)), dash(f.SessionAMBR, shaper.FormatRate(f.SessionAMBR)),
			dash(uint64(f.Mark), fmt.Sprintf("%#x", f.Mark)), f.TEID, class, rate)
	}
	_ = tw.Flush()
	if len(rep.Flows) == 0 {
		fmt.Fprintln(w, "(no rate-bearing QoS flows)")
	}
	if rep.RateSource != "" {
		fmt.Fprintf(w, "RATE: %s\n", rep.RateSource)
	}
	for _, p := range rep.summary {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
}

// deviceLine is one device's line: tree, classification mode, and the
// GTP-U programs' entries and counters.
func deviceLine(d statusDevice) string {
	dir := map[string]string{"N3": "downlink", "N6": "uplink"}[d.Role]
	s := fmt.Sprintf("%s %s (%s): ", d.Role, d.Dev, dir)
	if d.Tree {
		s += fmt.Sprintf("tree %x: with %d flow classes", shaper.OwnedMajor, d.FlowClasses)
	} else {
		s += "no gtpqos tree"
	}
	s += ", classification " + d.Mode
	for _, g := range d.GTPU {
		s += fmt.Sprintf("; %s (program %d): %d entries", g.Filter, g.ProgramID, g.Entries)
		if c := g.Counters; c != nil {
			s += fmt.Sprintf(", hit %d miss %d no-QFI %d not-GTP %d", c.Hit, c.Miss, c.NoQFI, c.NotGTP)
		}
	}
	if d.Error != "" {
		s += " (" + d.Error + ")"
	}
	return s
}

// gtp5gStatusSource reads the running system: sysfs/procfs via kmod,
// rules and patch knobs via gtpnl.
type gtp5gStatusSource struct {
	mod kmod.Module
	c   *gtpnl.Client
}

func (s *gtp5gStatusSource) loaded() (bool, error) { return s.mod.Loaded() }

func (s *gtp5gStatusSource) version() (string, gtpnl.Features, error) {
	c, err := gtpnl.Dial()
	if err != nil {
		return "", 0, err
	}
	s.c = c
	v, err := c.Version()
	if err != nil {
		return "", 0, err
	}
	f, err := c.Features()
	return v, f, err
}

// families describes gtp5g's generic netlink families (none if unknown).
func (s *gtp5gStatusSource) families() []string {
	if s.c == nil {
		return nil
	}
	fams, err := s.c.Families()
	if err != nil {
		return []string{"unknown (" + err.Error() + ")"}
	}
	var out []string
	for _, f := range fams {
		out = append(out, f.String())
	}
	return out
}

func (s *gtp5gStatusSource) markMode(f gtpnl.Features) (gtpnl.MarkMode, error) {
	if !f.Has(gtpnl.FeatureMarkCtrl) {
		return gtpnl.MarkOff, nil // stock gtp5g never marks
	}
	return s.c.MarkMode()
}

func (s *gtp5gStatusSource) policer(f gtpnl.Features) (bool, string, error) {
	return readPolicer(s.c, f, s.mod)
}

func (s *gtp5gStatusSource) rules() ([]gtpnl.QER, []gtpnl.PDR, []gtpnl.FAR, error) {
	qers, err := s.c.QERs()
	if err != nil {
		return nil, nil, nil, err
	}
	pdrs, err := s.c.PDRs()
	if err != nil {
		return nil, nil, nil, err
	}
	fars, err := s.c.FARs()
	if err != nil {
		return nil, nil, nil, err
	}
	return qers, pdrs, fars, nil
}

func (s *gtp5gStatusSource) close() {
	if s.c != nil {
		_ = s.c.Close()
	}
}
