package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
)

func init() {
	register(command{
		name:    "verify",
		summary: "check that traffic reaches its flow classes (reads counters twice; sends nothing)",
		run:     runVerify,
	})
}

func runVerify(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dev := fs.String("dev", "", "device with a gtpqos HTB tree")
	interval := fs.Duration("interval", 2*time.Second, "time between the two counter readings")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos verify --dev IF [--interval 2s]")
			fmt.Fprintln(stdout, "Prints one line per flow class that is not counting while unclassified traffic grows; exit 1 if any.")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return usagef("%v", err)
	}
	if *dev == "" {
		return usagef("--dev IF is required")
	}
	if *interval <= 0 {
		return usagef("--interval must be positive")
	}
	h, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("open netlink: %w", err)
	}
	defer h.Close()
	link, err := h.LinkByName(*dev)
	if err != nil {
		return fmt.Errorf("device %s: %w", *dev, err)
	}
	var opts []htb.Option
	snap, err := gtpu.ReadAttached(h, link, gtpu.Egress)
	if err != nil {
		return err
	}
	if snap != nil {
		c := gtpu.New(gtpu.Options{N3: *dev})
		if snap.Filter == gtpu.FilterUplinkN6 {
			opts = append(opts, htb.WithClassifier(c.Uplink()))
		} else {
			opts = append(opts, htb.WithClassifier(c.Downlink()))
		}
	}
	rec := htb.NewReconciler(h, *dev, opts...)
	tree, err := rec.Actual(ctx)
	if err != nil {
		return err
	}
	if tree == nil {
		return fmt.Errorf("dev %s: no gtpqos tree to verify", *dev)
	}
	before, err := rec.ClassStats(ctx)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(*interval):
	}
	after, err := rec.ClassStats(ctx)
	if err != nil {
		return err
	}
	var snap2 *gtpu.Snapshot
	if snap != nil {
		if snap2, err = gtpu.ReadAttached(h, link, gtpu.Egress); err != nil {
			return err
		}
	}
	v := verification{dev: *dev, interval: *interval, tree: tree, before: before, after: after, gtp1: snap, gtp2: snap2}
	problems, summary := v.check()
	for _, p := range problems {
		fmt.Fprintln(stdout, p)
	}
	fmt.Fprintln(stdout, summary)
	if len(problems) > 0 {
		return fmt.Errorf("dev %s: verify found %d problem(s)", *dev, len(problems))
	}
	return nil
}

// verification holds two readings of a device's counters.
type verification struct {
	dev           string
	interval      time.Duration
	tree          *htb.Tree
	before, after map[uint32]htb.ClassStats
	// gtp1 and gtp2 are the attached gtpu program's maps and counters at
	// the two readings (nil when no gtpu classifier is attached).
	gtp1, gtp2 *gtpu.Snapshot
}

// delta is how many packets class minor sent between the readings.
func (v verification) delta(minor uint16) uint64 {
	id := v.tree.ClassID(minor)
	a, b := v.after[id].Packets, v.before[id].Packets
	if a < b {
		return 0 // class re-created in between
	}
	return a - b
}

// label names a flow class by what classifies it.
func label(t *htb.Tree, c htb.Class) string {
	s := "class " + t.Handle(c.Minor)
	switch {
	case c.TEID != 0 && c.Mark != 0:
		s += fmt.Sprintf(" (teid=%d qfi=%d mark=%#x)", c.TEID, c.QFI, c.Mark)
	case c.TEID != 0 || c.QFI != 0:
		s += fmt.Sprintf(" (teid=%d qfi=%d)", c.TEID, c.QFI)
	case c.Mark != 0:
		s += fmt.Sprintf(" (mark=%#x)", c.Mark)
	}
	return s
}

// check returns one line per problem and a summary line.
//
// gtp5g v0.10.2 exports no per-PDR packet counters, so "the flow has
// traffic" is inferred from unclassified traffic: GTP-U packets the gtpu
// program found no entry for, or (other classifiers) the default class
// growing. A flow class that counts nothing while that grows is flagged.
func (v verification) check() (problems []string, summary string) {
	secs := v.interval.Seconds()
	dflt := v.delta(v.tree.DefaultMinor)
	var unclassified uint64
	what := fmt.Sprintf("the default class %s counted %d packets", v.tree.Handle(v.tree.DefaultMinor), dflt)
	if v.gtp2 != nil {
		problems = append(problems, v.danglingEntries()...)
	}
	// On N3 egress the gtpu program counts GTP-U it could not place. On N6
	// (mark_egress) there is no such counter: the default class is the signal.
	if v.gtp1 != nil && v.gtp2 != nil && v.gtp2.Filter == gtpu.FilterDownlink {
		d1, d2 := v.gtp1.Stats.Downlink, v.gtp2.Stats.Downlink
		miss := (d2.Miss - d1.Miss) + (d2.NoQFI - d1.NoQFI)
		unclassified = miss
		what = fmt.Sprintf("%d GTP-U packets matched no (TEID, QFI) entry", miss)
		if miss > 0 {
			problems = append(problems, fmt.Sprintf("dev %s: %d GTP-U packets in %.0fs matched no (TEID, QFI) entry and went to the default class %s",
				v.dev, miss, secs, v.tree.Handle(v.tree.DefaultMinor)))
		}
	} else {
		unclassified = dflt
	}
	flows, counting := 0, 0
	for _, c := range v.tree.Classes {
		if c.Role != shaper.RoleFlow {
			continue
		}
		flows++
		if v.tree.Classifier != "" && c.Mark == 0 && c.TEID == 0 && c.QFI == 0 {
			problems = append(problems, fmt.Sprintf("dev %s: %s: no %s classifier entry points at it; no packet can reach it", v.dev, label(v.tree, c), v.tree.Classifier))
			continue
		}
		if v.delta(c.Minor) > 0 {
			counting++
			continue
		}
		if unclassified > 0 {
			problems = append(problems, fmt.Sprintf("dev %s: %s counted no packets in %.0fs while %s: its traffic is likely misclassified",
				v.dev, label(v.tree, c), secs, what))
		}
	}
	summary = fmt.Sprintf("dev %s: %d flow classes, %d counting, default class +%d packets in %.0fs (classifier %s; stock gtp5g exports no PDR counters: compared with unclassified traffic)",
		v.dev, flows, counting, dflt, secs, orNone(v.tree.Classifier))
	return problems, summary
}

// danglingEntries lists gtpu map entries that point at classes the tree
// does not have.
func (v verification) danglingEntries() []string {
	var out []string
	have := map[uint32]bool{}
	for _, c := range v.tree.Classes {
		have[v.tree.ClassID(c.Minor)] = true
	}
	type ent struct {
		k   gtpu.Key
		cls uint32
	}
	var ents []ent
	for k, cls := range v.gtp2.Downlink {
		ents = append(ents, ent{k, cls})
	}
	for m, cls := range v.gtp2.MarkClass {
		ents = append(ents, ent{gtpu.Key{TEID: m}, cls})
	}
	sort.Slice(ents, func(i, j int) bool {
		return ents[i].cls < ents[j].cls || ents[i].cls == ents[j].cls && ents[i].k.TEID < ents[j].k.TEID
	})
	for _, e := range ents {
		if have[e.cls] {
			continue
		}
		what := e.k.String()
		if v.gtp2.Filter == gtpu.FilterUplinkN6 {
			what = fmt.Sprintf("mark=%#x", e.k.TEID)
		}
		out = append(out, fmt.Sprintf("dev %s: gtpu entry %s points at class %x:%x, which does not exist", v.dev, what, e.cls>>16, e.cls&0xffff))
	}
	return out
}

func orNone(k shaper.ClassifierKind) string {
	if k == "" {
		return "none"
	}
	return string(k)
}
