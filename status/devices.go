package status

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/vishvananda/netns"

	"github.com/free5gc/gtpqos/mtu"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/devlock"
	"github.com/free5gc/gtpqos/watch"
)

// RateSource says how status measures live rates: HTB classes carry a
// kernel rate estimator only when created with one, and gtpqos creates
// none, so status reads the class byte counters twice.
const RateSource = "class byte counters read twice %s apart (no kernel rate estimator on gtpqos classes)"

// Device is one shaped device as status shows it.
type Device struct {
	// Role is "N3" (downlink tree) or "N6" (uplink tree).
	Role string `json:"role"`
	Dev  string `json:"dev"`
	// Tree is true when the device holds gtpqos's tree, rooted at Root
	// ("6771:").
	Tree bool   `json:"tree"`
	Root string `json:"root,omitempty"`
	// FlowClasses counts the tree's flow classes.
	FlowClasses int `json:"flow_classes"`
	// Mode is the classification: "mark (fw)", "mark (bpf)", "gtpu" or
	// "none".
	Mode string `json:"mode"`
	// Accounting is the bytes the tree's classes (and the RATE column)
	// count: "packet" (the user's packets, Overhead bytes less than each
	// frame) or "frame".
	Accounting string `json:"accounting,omitempty"`
	Overhead   uint32 `json:"overhead,omitempty"`
	// Attachments lists the gtpqos clsact programs attached to the device
	// (the stock-gtp5g classifier; "gtpu" in JSON, as before).
	Attachments []shaper.Attachment `json:"gtpu,omitempty"`
	// Error is why the device could not be read (empty if it could).
	Error string `json:"error,omitempty"`
}

// FlowKey names a flow in one direction's tree.
type FlowKey struct {
	ID        shaper.FlowID
	Direction shaper.Direction
}

// ClassInfo is what a device's tree says about one flow's class.
type ClassInfo struct {
	// Class is the class handle ("6771:10").
	Class string
	// Rate is the class's live rate in bit/s (nil: not measured).
	Rate *uint64
}

// TreeView is what status learns from the devices.
type TreeView struct {
	Devices []Device
	Classes map[FlowKey]ClassInfo
	// RateSource describes how rates were measured ("" if none were).
	RateSource string
	Problems   []string
}

// DeviceTrees reads the N3 (downlink) and N6 (uplink) devices through
// their backends.
type DeviceTrees struct {
	// NetNS is the network namespace the devices are in (0: the current
	// one).
	NetNS netns.NsHandle
	// N3 and N6 name the devices ("" for none).
	N3, N6 string
	// Interval is the time between the two counter readings (0: no rates).
	Interval time.Duration
}

// reading is one device's first reading.
type reading struct {
	dev  Device
	dir  shaper.Direction
	be   backends.ReadCloser
	in   *shaper.Inspection
	at   time.Time
	ix   *shaper.Index[shaper.ClassState]
	last map[string]shaper.Counters
}

// Read implements Trees.
func (n DeviceTrees) Read(ctx context.Context, flows []shaper.Flow) (TreeView, error) {
	v := TreeView{Classes: map[FlowKey]ClassInfo{}}
	var reads []*reading
	for _, d := range []struct {
		role, dev string
		dir       shaper.Direction
	}{{"N3", n.N3, shaper.Downlink}, {"N6", n.N6, shaper.Uplink}} {
		if d.dev == "" {
			continue
		}
		r := n.inspect(ctx, d.role, d.dev, d.dir)
		if r.dev.Error != "" {
			v.Problems = append(v.Problems, fmt.Sprintf("%s %s: %s", d.role, d.dev, r.dev.Error))
		}
		v.Devices = append(v.Devices, r.dev)
		if r.in != nil && r.in.Owned {
			reads = append(reads, r)
		}
		if r.be != nil {
			defer r.be.Close()
		}
	}
	if n.N3 != "" {
		// Fragments on N3 break packet accounting and the GTP-U classifier.
		ws, err := mtu.Warnings(n.NetNS, n.N3)
		if err != nil {
			ws = []string{"MTU check: " + err.Error()}
		}
		v.Problems = append(v.Problems, ws...)
	}
	if len(reads) == 0 {
		return v, nil
	}
	if n.Interval > 0 {
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(n.Interval):
		}
		v.RateSource = fmt.Sprintf(RateSource, n.Interval)
	}
	for _, r := range reads {
		if n.Interval > 0 {
			c, err := r.be.Counters(ctx)
			if err != nil {
				v.Problems = append(v.Problems, fmt.Sprintf("%s %s: class stats: %v", r.dev.Role, r.dev.Dev, err))
			}
			r.last = c
		}
		for k, ci := range r.classes(flows) {
			v.Classes[k] = ci
		}
	}
	return v, nil
}

// inspect opens a device's backend and takes the first reading. Errors end
// up in Device.Error.
func (n DeviceTrees) inspect(ctx context.Context, role, dev string, dir shaper.Direction) *reading {
	r := &reading{dev: Device{Role: role, Dev: dev, Mode: "none"}, dir: dir}
	be, err := backends.OpenReader(dev, backends.Options{NetNS: n.NetNS, N3: n.N3, Direction: dir})
	if err != nil {
		r.dev.Error = err.Error()
		return r
	}
	r.be = be
	in, err := be.Inspect(ctx)
	r.at = time.Now()
	switch {
	case errors.Is(err, shaper.ErrNotOwned):
		r.dev.Error = "root qdisc is not gtpqos's (no gtpqos tree)"
		return r
	case err != nil:
		r.dev.Error = err.Error()
		return r
	}
	r.in, r.dev.Attachments = in, in.Attachments
	for _, a := range in.Attachments {
		if a.Hook == "egress" {
			r.dev.Mode = ModeName(classify.KindGTPU)
		}
	}
	if !in.Owned {
		return r
	}
	r.dev.Tree, r.dev.Root, r.dev.FlowClasses = true, in.Root, len(in.FlowClasses())
	r.dev.Accounting, r.dev.Overhead = in.Accounting.String(), in.Overhead
	if in.Classifier != "" {
		r.dev.Mode = ModeName(classify.Kind(in.Classifier))
	}
	r.ix = shaper.NewIndex[shaper.ClassState](len(in.Classes))
	for _, c := range in.FlowClasses() {
		r.ix.Add(c.Flow, c.Key, c)
	}
	return r
}

// classes maps the flows of the reading's direction to their classes (as
// shaper.Index does) with the rate of each class's byte counter between
// the two readings; a class without a second reading gets no rate.
func (r *reading) classes(flows []shaper.Flow) map[FlowKey]ClassInfo {
	out := map[FlowKey]ClassInfo{}
	elapsed := time.Since(r.at)
	for i := range flows {
		f := &flows[i]
		if f.Direction != r.dir {
			continue
		}
		c, ok := r.ix.Find(f)
		if !ok {
			continue
		}
		ci := ClassInfo{Class: c.Handle}
		if a, ok := r.last[c.Handle]; ok && elapsed > 0 && a.Bytes >= c.Counters.Bytes {
			rate := uint64(float64(a.Bytes-c.Counters.Bytes) * 8 / elapsed.Seconds())
			ci.Rate = &rate
		}
		out[FlowKey{f.ID, f.Direction}] = ci
	}
	return out
}

// ModeName is the classification mode as status prints it.
func ModeName(k classify.Kind) string {
	switch k {
	case classify.KindFw, classify.KindBPF:
		return fmt.Sprintf("mark (%s)", k)
	case "":
		return "none"
	}
	return string(k)
}

// DefaultConfig is where status looks for the N3/N6 devices when none are
// given.
const DefaultConfig = "/etc/gtpqos/watch.yaml"

// Devices returns the N3/N6 devices: n3/n6 when either is given; else,
// unless a config was named (explicit), the devices a running `gtpqos
// watch` holds (its device locks in lockDir record their roles; lockDir ""
// is where watch keeps them: the config's lock_dir, else
// devlock.DefaultDir); else the watch config's (if the file exists; a
// missing file named explicitly, or one that does not load, is a problem,
// not an error). Finding none is a problem saying where it looked.
func Devices(n3, n6, config string, explicit bool, lockDir string) (string, string, []string) {
	if n3 != "" || n6 != "" {
		return n3, n6, nil
	}
	cfg, cfgFound, cfgErr := loadWatchConfig(config, explicit)
	if lockDir == "" {
		lockDir = devlock.DefaultDir
		if cfgFound && cfgErr == nil && cfg.LockDir != "" {
			lockDir = cfg.LockDir
		}
	}
	if !explicit {
		if w3, w6 := WatchedDevices(lockDir); w3 != "" || w6 != "" {
			return w3, w6, nil
		}
	}
	if cfgErr != nil {
		return "", "", []string{fmt.Sprintf("devices: %v (use --n3/--n6)", cfgErr)}
	}
	if cfg.N3 != "" || cfg.N6 != "" {
		return cfg.N3, cfg.N6, nil
	}
	where := "no config file"
	if cfgFound {
		where = "config " + config + " names no n3/n6"
	}
	return "", "", []string{fmt.Sprintf("devices: none found: no gtpqos watch holds a device lock in %s and %s (use --n3/--n6, or --lock-dir where the watch keeps its locks)", lockDir, where)}
}

// loadWatchConfig reads the watch config for Devices: found is false when
// there is none to read (no path, or an absent file not named explicitly).
func loadWatchConfig(path string, explicit bool) (cfg watch.Config, found bool, err error) {
	if path == "" {
		return cfg, false, nil
	}
	if _, serr := os.Stat(path); serr != nil && !explicit {
		return cfg, false, nil
	}
	cfg, err = watch.LoadConfig(path)
	return cfg, true, err
}

// WatchedDevices returns the N3 and N6 devices of a running `gtpqos
// watch` in this network namespace, from the device locks it holds in
// lockDir ("" where none).
func WatchedDevices(lockDir string) (n3, n6 string) {
	for _, h := range devlock.Held(lockDir) {
		if h.Command != "watch" {
			continue
		}
		switch h.Role {
		case "n3":
			n3 = h.Dev
		case "n6":
			n6 = h.Dev
		}
	}
	return n3, n6
}
