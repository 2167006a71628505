package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/free5gc/gtpqos/watch"
)

func init() {
	register(command{
		name:    "watch",
		summary: "keep the N3/N6 HTB trees in step with gtp5g's QERs, live (daemon)",
		run:     runWatch,
	})
}

// watchFlags parses watch's flags over the config file: a flag given on
// the command line wins over the file.
func watchFlags(args []string, stdout io.Writer) (cfg watch.Config, path string, override func(*watch.Config), err error) {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	d := watch.DefaultConfig()
	var (
		n3, n6, link, n6link, markMode, cls, metrics, lockDir, level string
		poll, resync, retry                                          time.Duration
		cleanup, force                                               bool
	)
	fs.StringVar(&path, "config", "", "YAML config file (flags win over it; SIGHUP reloads it)")
	fs.StringVar(&n3, "n3", "", "N3 device: downlink tree on its egress (required)")
	fs.StringVar(&n6, "n6", "", "N6 device: uplink tree on its egress (optional)")
	fs.StringVar(&link, "link-rate", "", "downlink bottleneck rate, e.g. 30mbit (required)")
	fs.StringVar(&n6link, "n6-link-rate", "", "uplink bottleneck rate (default: --link-rate)")
	fs.DurationVar(&poll, "poll", time.Duration(d.Poll), "dump interval without QoS events (stock gtp5g)")
	fs.DurationVar(&resync, "resync", time.Duration(d.Resync), "full resync interval (repairs drift)")
	fs.DurationVar(&retry, "retry", time.Duration(d.Retry), "wait before retrying when gtp5g or a device is gone")
	fs.StringVar(&markMode, "mark-mode", d.MarkMode, "gtp5g patch mark mode to set: flow, qfi or keep")
	fs.StringVar(&cls, "classifier", d.Classifier, "classifier: auto, fw, bpf (patched gtp5g marks packets); stock gtp5g always uses gtpu (TEID+QFI)")
	fs.StringVar(&metrics, "metrics-addr", d.MetricsAddr, "Prometheus listen address (loopback only; 'off' disables)")
	fs.BoolVar(&cleanup, "cleanup-on-exit", false, "remove the trees on SIGTERM/SIGINT (default: leave them shaping)")
	fs.BoolVar(&force, "force", false, "replace a root qdisc gtpqos did not create")
	fs.StringVar(&lockDir, "lock-dir", d.LockDir, "directory of the per-device lock files")
	fs.StringVar(&level, "log-level", d.LogLevel, "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos watch --n3 IF [--n6 IF] --link-rate R [--config FILE] [flags]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return cfg, "", nil, errHelp
		}
		return cfg, "", nil, usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return cfg, "", nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	override = func(c *watch.Config) {
		str := func(name, v string, dst *string) {
			if set[name] {
				*dst = v
			}
		}
		dur := func(name string, v time.Duration, dst *watch.Duration) {
			if set[name] {
				*dst = watch.Duration(v)
			}
		}
		str("n3", n3, &c.N3)
		str("n6", n6, &c.N6)
		str("link-rate", link, &c.LinkRate)
		str("n6-link-rate", n6link, &c.N6LinkRate)
		str("mark-mode", markMode, &c.MarkMode)
		str("classifier", cls, &c.Classifier)
		str("metrics-addr", metrics, &c.MetricsAddr)
		str("lock-dir", lockDir, &c.LockDir)
		str("log-level", level, &c.LogLevel)
		dur("poll", poll, &c.Poll)
		dur("resync", resync, &c.Resync)
		dur("retry", retry, &c.Retry)
		if set["cleanup-on-exit"] {
			c.CleanupOnExit = cleanup
		}
		if set["force"] {
			c.Force = force
		}
	}
	cfg, err = loadWatchConfig(path, override)
	return cfg, path, override, err
}

// errHelp says -h was given and the help printed.
var errHelp = errors.New("help requested")

func loadWatchConfig(path string, override func(*watch.Config)) (watch.Config, error) {
	cfg := watch.DefaultConfig()
	if path != "" {
		var err error
		if cfg, err = watch.LoadConfig(path); err != nil {
			return cfg, err
		}
	}
	override(&cfg)
	return cfg, nil
}

func runWatch(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, path, override, err := watchFlags(args, stdout)
	if errors.Is(err, errHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if cfg.N3 == "" {
		return usagef("--n3 is required (the N3 device, e.g. --n3 eth1)")
	}
	if cfg.LinkRate == "" {
		return usagef("--link-rate is required (the N3 bottleneck, e.g. --link-rate 30mbit)")
	}
	dlPol, ulPol, err := cfg.Policies()
	if err != nil {
		return usagef("%v", err)
	}
	if cfg.MarkMode != "keep" {
		if _, err := gtpnl.ParseMarkMode(cfg.MarkMode); err != nil {
			return usagef("--mark-mode: %v (or keep)", err)
		}
	}
	log := logrus.New()
	log.SetOutput(os.Stderr)
	if lvl, err := logrus.ParseLevel(cfg.LogLevel); err == nil {
		log.SetLevel(lvl)
	} else {
		return usagef("--log-level: %v", err)
	}

	// 1. gtp5g first: without it nothing else matters (fail fast, one line).
	gc, err := gtpnl.Dial()
	if err != nil {
		return err // "gtp5g module not loaded"
	}
	feats, err := gc.Features()
	if err != nil {
		gc.Close()
		return fmt.Errorf("gtp5g features: %w", err)
	}
	patched := feats.Has(gtpnl.FeatureFlowMark | gtpnl.FeatureQoSEvents)
	if patched && dlPol.Classifier == shaper.KindGTPU {
		gc.Close()
		return fmt.Errorf("classifier gtpu is for stock gtp5g; this gtp5g (features %s) marks packets: use auto, fw or bpf", feats)
	}

	// 2. Devices: each must exist, and only one watch may manage it (the
	// lock is taken before anything is changed).
	devs := []string{cfg.N3}
	if cfg.N6 != "" {
		devs = append(devs, cfg.N6)
	}
	for _, d := range devs {
		if _, err := netlink.LinkByName(d); err != nil {
			gc.Close()
			return fmt.Errorf("device %s: %w", d, err)
		}
		lk, err := watch.LockDevice(cfg.LockDir, d)
		if err != nil {
			gc.Close()
			return err
		}
		defer lk.Unlock()
	}

	var modeLine string
	markMode := gtpnl.MarkOff
	if patched {
		modeLine, markMode, err = ensureMarkMode(gc, cfg.MarkMode, feats)
		if err != nil {
			gc.Close()
			return err
		}
	}
	gc.Close()

	h, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("netlink handle: %w", err)
	}
	defer h.Close()

	// 3. Mode: the patch's events and marks, or polling and the GTP-U
	// header classifier.
	var dlOpts, ulOpts []htb.Option
	var gtpuCls *gtpu.Classifier
	if patched {
		if cfg.Classifier != "" && cfg.Classifier != string(shaper.KindAuto) {
			dlOpts = append(dlOpts, htb.WithClassifierKind(dlPol.Classifier))
			ulOpts = append(ulOpts, htb.WithClassifierKind(ulPol.Classifier))
		}
		log.WithField("dev", cfg.N3).Infof("mode: events (%s), classifier %s by mark", modeLine, dlPol.Classifier)
	} else {
		gtpuCls = gtpu.New(gtpu.Options{N3: cfg.N3})
		dlOpts = append(dlOpts, htb.WithClassifier(gtpuCls.Downlink()))
		ulOpts = append(ulOpts, htb.WithClassifier(gtpuCls.Uplink()))
		dlPol.Classifier, ulPol.Classifier = shaper.KindGTPU, shaper.KindGTPU
		log.WithField("dev", cfg.N3).Infof("mode: polling every %s (stock gtp5g, features %s: no QoS events), classifier gtpu (TEID+QFI from the GTP-U header)",
			time.Duration(cfg.Poll), feats)
	}
	dlOpts = append(dlOpts, htb.WithForce(cfg.Force))
	ulOpts = append(ulOpts, htb.WithForce(cfg.Force))

	var first atomic.Bool // the source's first dial follows the start-up checks
	first.Store(true)
	metrics := watch.NewMetrics()
	dl := watch.NewShaperApplier(htb.NewReconciler(h, cfg.N3, dlOpts...), dlPol)
	metrics.WatchClasses(dl)
	opt := watch.Options{
		Source: &watch.GTP5GSource{
			Dial:           gtpnl.Dial,
			View:           qosView(markMode, !patched),
			WithEvents:     patched,
			OnViewProblems: func(ps []string) { logViewProblems(log, ps) },
			OnConnect: func(c *gtpnl.Client) error {
				if !patched || first.Swap(false) {
					return nil // the start-up already set the mark mode
				}
				// gtp5g was reloaded: a fresh module marks nothing.
				line, _, err := ensureMarkMode(c, cfg.MarkMode, feats)
				if err == nil {
					log.WithField("dev", cfg.N3).Infof("gtp5g reconnected: %s", line)
				}
				return err
			},
		},
		Downlink: dl, Poll: time.Duration(cfg.Poll), Resync: time.Duration(cfg.Resync),
		Retry: time.Duration(cfg.Retry), Observer: &logObserver{log: log}, Metrics: metrics,
	}
	var ul *watch.ShaperApplier
	if cfg.N6 != "" {
		ul = watch.NewShaperApplier(htb.NewReconciler(h, cfg.N6, ulOpts...), ulPol)
		metrics.WatchClasses(ul)
		opt.Uplink = ul
	}
	eng, err := watch.New(opt)
	if err != nil {
		return err
	}
	defer opt.Source.(*watch.GTP5GSource).Close()

	if cfg.MetricsAddr != "" && cfg.MetricsAddr != "off" {
		srv, err := serveMetrics(cfg.MetricsAddr, metrics)
		if err != nil {
			return err
		}
		defer srv.Close()
		log.Infof("metrics on http://%s/metrics", cfg.MetricsAddr)
	}

	// SIGHUP reloads the config: policy and rates apply at once; devices,
	// the lock and the metrics address need a restart.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload(log, path, override, cfg, dl, ul, eng)
			}
		}
	}()

	if err := eng.Run(ctx); err != nil {
		return err
	}
	if cfg.CleanupOnExit {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := eng.Cleanup(cctx)
		if gtpuCls != nil {
			err = errors.Join(err, gtpuCls.Close(h))
		}
		if err != nil {
			return err
		}
		log.Info("stopped; trees removed (--cleanup-on-exit)")
		return nil
	}
	log.Info("stopped; trees left in place, still shaping")
	return nil
}

// ensureMarkMode sets the patch's mark mode unless it is already what the
// operator wants ("keep": anything but off is kept, off becomes flow).
func ensureMarkMode(gc *gtpnl.Client, want string, feats gtpnl.Features) (string, gtpnl.MarkMode, error) {
	cur, err := gc.MarkMode()
	if err != nil {
		return "", 0, fmt.Errorf("gtp5g mark mode: %w", err)
	}
	target := cur
	switch {
	case want == "keep" && cur == gtpnl.MarkOff:
		target = gtpnl.MarkFlow
	case want != "keep":
		target, _ = gtpnl.ParseMarkMode(want)
	}
	if target == cur {
		return fmt.Sprintf("gtp5g patch, features %s, mark mode %s already set", feats, cur), cur, nil
	}
	if err := gc.SetMarkMode(target); err != nil {
		return "", 0, fmt.Errorf("set gtp5g mark mode %s: %w", target, err)
	}
	return fmt.Sprintf("gtp5g patch, features %s, mark mode %s -> %s", feats, cur, target), target, nil
}

// qosView joins gtp5g's rules with qosview, marks per the module's mode.
// On stock gtp5g (which marks nothing) uplink flows get marks of gtpqos's
// own, which the GTP-U classifier sets on N3 ingress for the N6 tree.
func qosView(mode gtpnl.MarkMode, stock bool) watch.ViewFunc {
	var marks watch.StockMarks
	return func(qers []gtpnl.QER, pdrs []gtpnl.PDR, fars []gtpnl.FAR) ([]shaper.Flow, []string) {
		flows, problems := qosview.Build(qers, pdrs, fars, qosview.Options{MarkMode: mode})
		if stock {
			flows = marks.Assign(flows)
		}
		out := make([]string, len(problems))
		for i, p := range problems {
			out[i] = p.String()
		}
		return flows, out
	}
}

// logViewProblems logs the rules the QoS view could not map, once per
// change of the set.
func logViewProblems(log *logrus.Logger, ps []string) {
	if len(ps) == 0 {
		log.Info("qos view: every rule maps to a flow again")
		return
	}
	for _, p := range ps {
		log.Warn("qos view: " + p)
	}
}

// serveMetrics listens on addr (loopback only) and serves /metrics.
func serveMetrics(addr string, m *watch.Metrics) (*http.Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usagef("--metrics-addr %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, usagef("--metrics-addr %q: not a loopback address (metrics are served on loopback only; put a proxy in front to export them)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// reload re-reads the config file (SIGHUP) and applies what can change live.
func reload(log *logrus.Logger, path string, override func(*watch.Config), old watch.Config,
	dl, ul *watch.ShaperApplier, eng *watch.Engine) {
	if path == "" {
		log.Warn("SIGHUP: no --config file to reload")
		return
	}
	cfg, err := loadWatchConfig(path, override)
	if err == nil {
		var dlPol, ulPol shaper.Policy
		if dlPol, ulPol, err = cfg.Policies(); err == nil {
			if dl.Tree() != nil && dl.Tree().Classifier != "" {
				dlPol.Classifier = dl.Tree().Classifier
				ulPol.Classifier = dl.Tree().Classifier
			}
			dl.SetPolicy(dlPol)
			if ul != nil {
				ul.SetPolicy(ulPol)
			}
		}
	}
	if err != nil {
		log.WithError(err).Error("SIGHUP: config not reloaded, keeping the running one")
		return
	}
	if cfg.N3 != old.N3 || cfg.N6 != old.N6 || cfg.MetricsAddr != old.MetricsAddr || cfg.LockDir != old.LockDir {
		log.Warn("SIGHUP: device, metrics or lock changes need a restart; applied rates and policy only")
	}
	if lvl, err := logrus.ParseLevel(cfg.LogLevel); err == nil {
		log.SetLevel(lvl)
	}
	log.Infof("SIGHUP: reloaded %s", path)
	eng.RequestResync("reload")
}

// logObserver logs what the engine does: one info line per change, nothing
// per poll, one line per outage and per recovery.
type logObserver struct {
	log *logrus.Logger
}

// maxChangeLines caps the per-change info lines of one reconcile (a start
// over 10k flows); the rest go to debug after one summary line.
const maxChangeLines = 50

func (o *logObserver) Applied(dev string, res watch.Result, took time.Duration) {
	for i, c := range res.Changes {
		e := o.log.WithField("dev", dev)
		if c.Class != "" {
			e = e.WithField("class", c.Class)
		}
		switch {
		case c.Flow.QERID != 0:
			e = e.WithFields(logrus.Fields{"seid": c.Flow.SEID, "qer": c.Flow.QERID, "qfi": c.QFI})
		case c.Flow.SEID != 0: // a session (AMBR) class
			e = e.WithField("seid", c.Flow.SEID)
		}
		msg := strings.TrimSpace(c.Op + " " + c.Object + ": " + c.Detail)
		if i < maxChangeLines {
			e.Info(msg)
		} else {
			e.Debug(msg)
		}
	}
	if n := len(res.Changes); n > maxChangeLines {
		o.log.WithField("dev", dev).Infof("%d more changes (log level debug shows them); %d flows, %d classes, took %s",
			n-maxChangeLines, res.Flows, res.Classes, took.Round(time.Millisecond))
	}
}

func (o *logObserver) Problems(dev string, ps []watch.Problem) {
	if len(ps) == 0 {
		o.log.WithField("dev", dev).Info("planner problems solved")
		return
	}
	for _, p := range ps {
		e := o.log.WithField("dev", dev)
		if p.Flow != (shaper.FlowID{}) {
			e = e.WithFields(logrus.Fields{"seid": p.Flow.SEID, "qer": p.Flow.QERID, "qfi": p.QFI})
		}
		e.Warn(p.Msg)
	}
}

func (o *logObserver) Resync(reason string) {
	if reason == "periodic" {
		o.log.Debug("periodic resync")
		return
	}
	o.log.Infof("full resync: %s", reason)
}

func (o *logObserver) Degraded(stage string, err error) {
	o.log.WithField("stage", stage).WithError(err).Warn("failing; retrying until it works (waiting for gtp5g or the device to come back)")
}

func (o *logObserver) Recovered(stage string) {
	o.log.WithField("stage", stage).Info("working again")
}
