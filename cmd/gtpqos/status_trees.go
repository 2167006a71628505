package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// statusRateSource says how status measures live rates. HTB classes carry
// a kernel rate estimator only when created with "est" (TCA_RATE) or with
// sch_htb's htb_rate_est=1; gtpqos creates none, and vishvananda/netlink
// cannot tell an absent estimator from a zero rate. So status reads the
// class byte counters twice.
const statusRateSource = "class byte counters read twice %s apart (no kernel rate estimator on gtpqos classes)"

// statusDevice is one shaped device as status shows it.
type statusDevice struct {
	// Role is "N3" (downlink tree) or "N6" (uplink tree).
	Role string `json:"role"`
	Dev  string `json:"dev"`
	// Tree is true when the device's root is gtpqos's HTB (6771:).
	Tree bool `json:"tree"`
	// FlowClasses counts the tree's flow classes.
	FlowClasses int `json:"flow_classes"`
	// Mode is the classification: "mark (fw)", "mark (bpf)", "gtpu" or
	// "none".
	Mode string `json:"mode"`
	// GTPU lists the gtpqos clsact programs attached to the device.
	GTPU []statusGTPU `json:"gtpu,omitempty"`
	// Error is why the device could not be read (empty if it could).
	Error string `json:"error,omitempty"`
}

// statusGTPU is one attached GTP-U classifier program.
type statusGTPU struct {
	Filter    string `json:"filter"`
	ProgramID uint32 `json:"program_id"`
	// Entries counts the map entries the program looks up.
	Entries int `json:"entries"`
	// Counters are the program's packet counters (nil for mark_egress,
	// which counts nothing).
	Counters *gtpu.Counters `json:"counters,omitempty"`
}

// statusTreeView is what status learns from the devices.
type statusTreeView struct {
	Devices []statusDevice
	Classes map[statusFlowKey]statusClassInfo
	// RateSource describes how rates were measured ("" if none were).
	RateSource string
	Problems   []string
}

// statusTrees reads the trees on the devices for the flows.
type statusTrees interface {
	read(ctx context.Context, flows []shaper.Flow) (statusTreeView, error)
}

// netlinkTrees reads the N3 (downlink) and N6 (uplink) trees through h.
type netlinkTrees struct {
	h        *netlink.Handle
	n3, n6   string
	interval time.Duration
}

// deviceRead is one device's first reading.
type deviceRead struct {
	dev statusDevice
	// ulMarks is the N3 ingress program's (TEID, QFI) -> mark map (gtpu).
	ulMarks map[gtpu.Key]uint32
	dir     shaper.Direction
	rec     *htb.Reconciler
	tree    *htb.Tree
	before  map[uint32]htb.ClassStats
	// beforeAt is when the first reading was taken: a rate is the byte
	// delta over the time between this device's two readings, not over the
	// wait alone (reading the other device, or a loaded machine, adds to it).
	beforeAt time.Time
}

func (n netlinkTrees) read(ctx context.Context, flows []shaper.Flow) (statusTreeView, error) {
	v := statusTreeView{Classes: map[statusFlowKey]statusClassInfo{}}
	var reads []*deviceRead
	var ulMarks map[gtpu.Key]uint32
	for _, d := range []struct {
		role, dev string
		dir       shaper.Direction
	}{{"N3", n.n3, shaper.Downlink}, {"N6", n.n6, shaper.Uplink}} {
		if d.dev == "" {
			continue
		}
		r := readDevice(ctx, n.h, d.role, d.dev)
		r.dir = d.dir
		if r.dev.Error != "" {
			v.Problems = append(v.Problems, fmt.Sprintf("%s %s: %s", d.role, d.dev, r.dev.Error))
		}
		v.Devices = append(v.Devices, r.dev)
		if r.ulMarks != nil {
			ulMarks = r.ulMarks
		}
		if r.tree != nil {
			reads = append(reads, r)
		}
	}
	if len(reads) == 0 {
		return v, nil
	}
	flows = markUplink(flows, ulMarks)
	if n.interval > 0 {
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(n.interval):
		}
	}
	for _, r := range reads {
		var after map[uint32]htb.ClassStats
		var elapsed time.Duration
		if n.interval > 0 {
			var err error
			if after, err = r.rec.ClassStats(ctx); err != nil {
				v.Problems = append(v.Problems, fmt.Sprintf("%s %s: class stats: %v", r.dev.Role, r.dev.Dev, err))
			}
			elapsed = time.Since(r.beforeAt)
		}
		for k, ci := range flowClasses(r.tree, flows, r.dir, r.before, after, elapsed) {
			v.Classes[k] = ci
		}
	}
	if n.interval > 0 {
		v.RateSource = fmt.Sprintf(statusRateSource, n.interval)
	}
	return v, nil
}

// readDevice reads a device's classification mode, tree and first class
// counters. Errors end up in dev.Error.
func readDevice(ctx context.Context, h *netlink.Handle, role, dev string) *deviceRead {
	r := &deviceRead{dev: statusDevice{Role: role, Dev: dev, Mode: "none"}}
	link, err := h.LinkByName(dev)
	if err != nil {
		r.dev.Error = fmt.Sprintf("device %s: %v", dev, err)
		return r
	}
	var opts []htb.Option
	for _, hook := range []gtpu.Hook{gtpu.Egress, gtpu.Ingress} {
		snap, err := gtpu.ReadAttached(h, link, hook)
		if err != nil {
			r.dev.Error = err.Error()
			continue
		}
		if snap == nil {
			continue
		}
		r.dev.GTPU = append(r.dev.GTPU, gtpuOf(snap))
		if snap.Filter == gtpu.FilterUplinkN3 {
			r.ulMarks = snap.Uplink
		}
		if hook == gtpu.Egress {
			c := gtpu.New(gtpu.Options{N3: dev})
			if snap.Filter == gtpu.FilterUplinkN6 {
				opts = append(opts, htb.WithClassifier(c.Uplink()))
			} else {
				opts = append(opts, htb.WithClassifier(c.Downlink()))
			}
			r.dev.Mode = modeName(shaper.KindGTPU)
		}
	}
	r.rec = htb.NewReconciler(h, dev, opts...)
	t, err := r.rec.Actual(ctx)
	switch {
	case errors.Is(err, shaper.ErrNotOwned):
		r.dev.Error = "root qdisc is not gtpqos's (no gtpqos tree)"
		return r
	case err != nil:
		r.dev.Error = err.Error()
		return r
	case t == nil:
		return r
	}
	r.dev.Tree = true
	r.dev.FlowClasses = len(t.FlowClasses())
	if t.Classifier != "" {
		r.dev.Mode = modeName(t.Classifier)
	}
	if r.before, err = r.rec.ClassStats(ctx); err != nil {
		r.dev.Error = fmt.Sprintf("class stats: %v", err)
		return r
	}
	r.beforeAt = time.Now()
	r.tree = t
	return r
}

// markUplink returns flows with each uplink flow that has no mark (stock
// gtp5g) given the mark the N3 ingress GTP-U program sets for its (TEID,
// QFI) (or its QFI-only fallback): the N6 tree is bound by mark only.
func markUplink(flows []shaper.Flow, ulMarks map[gtpu.Key]uint32) []shaper.Flow {
	if len(ulMarks) == 0 {
		return flows
	}
	out := make([]shaper.Flow, len(flows))
	for i, f := range flows {
		if f.Direction == shaper.Uplink && f.Mark == 0 {
			m, ok := ulMarks[gtpu.Key{TEID: f.TEID, QFI: f.QFI}]
			if !ok {
				m = ulMarks[gtpu.Key{QFI: f.QFI}]
			}
			f.Mark = m
		}
		out[i] = f
	}
	return out
}

// modeName is the classification mode as status prints it.
func modeName(k shaper.ClassifierKind) string {
	switch k {
	case shaper.KindFw, shaper.KindBPF:
		return fmt.Sprintf("mark (%s)", k)
	case "":
		return "none"
	}
	return string(k)
}

// gtpuOf summarises an attached program's snapshot.
func gtpuOf(s *gtpu.Snapshot) statusGTPU {
	g := statusGTPU{Filter: s.Filter, ProgramID: s.ProgramID}
	switch s.Filter {
	case gtpu.FilterDownlink:
		g.Entries = len(s.Downlink)
		c := s.Stats.Downlink
		g.Counters = &c
	case gtpu.FilterUplinkN3:
		g.Entries = len(s.Uplink)
		c := s.Stats.Uplink
		g.Counters = &c
	default:
		g.Entries = len(s.MarkClass)
	}
	return g
}

// flowClasses maps the flows of direction dir to the classes of t (a tree
// read from the kernel, so flow classes are known only by their classifier
// bindings) the way the classifier does: by mark when the flow has one and
// a class is bound to it, else by (TEID, QFI), else by (0, QFI) (the GTP-U
// program's QFI-only fallback). The rate is the byte counters' growth from
// before to after over elapsed; a flow whose class has no second reading
// (after nil) gets no rate.
func flowClasses(t *htb.Tree, flows []shaper.Flow, dir shaper.Direction, before, after map[uint32]htb.ClassStats, elapsed time.Duration) map[statusFlowKey]statusClassInfo {
	type tq struct {
		teid uint32
		qfi  uint8
	}
	byMark := map[uint32]uint16{}
	byKey := map[tq]uint16{}
	for _, c := range t.FlowClasses() { // sorted by minor: the lowest wins
		if _, dup := byMark[c.Mark]; c.Mark != 0 && !dup {
			byMark[c.Mark] = c.Minor
		}
		k := tq{c.TEID, c.QFI}
		if _, dup := byKey[k]; (c.TEID != 0 || c.QFI != 0) && !dup {
			byKey[k] = c.Minor
		}
	}
	out := map[statusFlowKey]statusClassInfo{}
	for _, f := range flows {
		if f.Direction != dir {
			continue
		}
		minor, ok := byMark[f.Mark]
		if f.Mark == 0 || !ok {
			if minor, ok = byKey[tq{f.TEID, f.QFI}]; !ok || f.TEID == 0 {
				minor, ok = byKey[tq{0, f.QFI}]
			}
		}
		if !ok {
			continue
		}
		id := t.ClassID(minor)
		ci := statusClassInfo{Class: t.Handle(minor)}
		if a, okA := after[id]; okA && elapsed > 0 {
			if b, okB := before[id]; okB && a.Bytes >= b.Bytes {
				r := uint64(float64(a.Bytes-b.Bytes) * 8 / elapsed.Seconds())
				ci.Rate = &r
			}
		}
		out[statusFlowKey{f.ID, f.Direction}] = ci
	}
	return out
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
