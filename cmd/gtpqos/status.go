package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/devlock"
	"github.com/free5gc/gtpqos/status"
)

func init() {
	register(command{
		name:    "status",
		summary: "show the QoS flows as gtp5g holds them (SEID, QER, QFI, direction, GBR, MBR, mark) and the module's knobs",
		run:     runStatus,
	})
}

func runStatus(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print JSON")
	n3 := fs.String("n3", "", "N3 device with the downlink tree (default: the watch config's n3)")
	n6 := fs.String("n6", "", "N6 device with the uplink tree (default: the watch config's n6)")
	config := fs.String("config", status.DefaultConfig, "watch config file read for n3/n6 when --n3/--n6 are not given and no watch runs (ignored if absent)")
	lockDir := fs.String("lock-dir", "", "where a running gtpqos watch holds its device locks (they name its n3/n6 devices; default: the watch config's lock_dir, else "+devlock.DefaultDir+")")
	interval := fs.Duration("interval", time.Second, "time between the two class counter readings for the RATE column (0: no rates)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos status [--json] [--n3 IF] [--n6 IF] [--config FILE] [--lock-dir DIR] [--interval 1s]")
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
	src := status.NewHost()
	defer src.Close()
	// Devices are resolved after gtp5g is found, so that without gtp5g
	// status prints only that.
	var devProblems []string
	trees := func() status.Trees {
		d3, d6, p := status.Devices(*n3, *n6, *config, explicit, *lockDir)
		devProblems = p
		if d3 == "" && d6 == "" {
			return nil
		}
		return status.DeviceTrees{N3: d3, N6: d6, Interval: *interval}
	}
	rep, err := status.Collect(ctx, src, trees)
	if err != nil {
		return err
	}
	if len(devProblems) > 0 {
		rep.Problems = append(devProblems, rep.Problems...)
		rep.Summary = append(append([]string(nil), devProblems...), rep.Summary...)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	renderStatus(stdout, rep)
	return nil
}

func renderStatus(w io.Writer, rep status.Report) {
	feats := "none (stock gtp5g)"
	if len(rep.Features) > 0 {
		feats = strings.Join(rep.Features, ",")
	}
	fmt.Fprintf(w, "gtp5g %s  features: %s  mark mode: %s  native policer: %s  (mark mode and policer are machine-wide: every UPF on this host shares them)\n", rep.Version, feats, rep.MarkMode, rep.Policer)
	if len(rep.Families) > 0 {
		fmt.Fprintf(w, "families: %s\n", strings.Join(rep.Families, "; "))
	}
	for _, d := range rep.Devices {
		fmt.Fprintln(w, deviceLine(d))
	}
	if len(rep.Devices) == 0 {
		fmt.Fprintln(w, "devices: none given (--n3/--n6, a running gtpqos watch, or n3/n6 in the watch config): no CLASS/RATE columns")
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
	for _, p := range rep.Summary {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
}

// deviceLine is one device's line: tree, classification mode, and the
// GTP-U programs' entries and counters.
func deviceLine(d status.Device) string {
	dir := map[string]string{"N3": "downlink", "N6": "uplink"}[d.Role]
	s := fmt.Sprintf("%s %s (%s): ", d.Role, d.Dev, dir)
	if d.Tree {
		s += fmt.Sprintf("tree %s with %d flow classes", d.Root, d.FlowClasses)
		switch d.Accounting {
		case "packet":
			s += fmt.Sprintf(", accounting packet (classes and RATE count the user's packets, %d bytes less than each frame)", d.Overhead)
		case "frame":
			s += ", accounting frame (classes and RATE count whole frames)"
		}
	} else {
		s += "no gtpqos tree"
	}
	s += ", classification " + d.Mode
	for _, g := range d.Attachments {
		s += fmt.Sprintf("; %s (program %d): %d entries", g.Name, g.ProgramID, g.Entries)
		if g.SDFTEIDs > 0 {
			s += fmt.Sprintf(", SDF rules of %d TEIDs", g.SDFTEIDs)
		}
		if len(g.Counters) > 0 {
			s += ", " + counterList(g.Counters)
		}
	}
	if d.Error != "" {
		s += " (" + d.Error + ")"
	}
	return s
}

// counterList formats a program's counters: "hit 5 miss 2 no-QFI 0 not-GTP 0".
func counterList(c map[string]uint64) string {
	order := map[string]int{"hit": 0, "miss": 1, "no-qfi": 2, "not-gtp": 3}
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		oi, iok := order[names[i]]
		oj, jok := order[names[j]]
		if iok != jok {
			return iok
		}
		if oi != oj {
			return oi < oj
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		label := strings.NewReplacer("qfi", "QFI", "gtp", "GTP").Replace(n)
		parts[i] = fmt.Sprintf("%s %d", label, c[n])
	}
	return strings.Join(parts, " ")
}

// formatLiveRate prints a measured rate with two decimals ("16.71mbit").
func formatLiveRate(v uint64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fgbit", float64(v)/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fmbit", float64(v)/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fkbit", float64(v)/1e3)
	}
	return fmt.Sprintf("%dbit", v)
}
