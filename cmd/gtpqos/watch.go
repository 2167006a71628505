package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/watch"
)

func init() {
	register(command{
		name:    "watch",
		summary: "keep the N3/N6 trees in step with gtp5g's QERs, live (daemon)",
		run:     runWatch,
	})
}

// watchFlags parses watch's flags over the config file: a flag given on
// the command line wins over the file. Each flag is named after its
// config key ("--link-rate" sets link_rate).
func watchFlags(args []string, stdout io.Writer) (cfg watch.Config, path string, over watch.Override, err error) {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	d := watch.DefaultConfig()
	v := &over.Config
	fs.StringVar(&path, "config", "", "YAML config file (flags win over it; SIGHUP reloads it)")
	fs.StringVar(&v.N3, "n3", "", "N3 device: downlink tree on its egress (required)")
	fs.StringVar(&v.N6, "n6", "", "N6 device: uplink tree on its egress (optional)")
	fs.StringVar(&v.LinkRate, "link-rate", "", "downlink bottleneck rate, e.g. 30mbit (required)")
	fs.StringVar(&v.N6LinkRate, "n6-link-rate", "", "uplink bottleneck rate (default: --link-rate)")
	fs.DurationVar((*time.Duration)(&v.Poll), "poll", time.Duration(d.Poll), "dump interval without QoS events (stock gtp5g)")
	fs.DurationVar((*time.Duration)(&v.Resync), "resync", time.Duration(d.Resync), "interval of the resync that reads the devices back and repairs drift")
	fs.DurationVar((*time.Duration)(&v.Retry), "retry", time.Duration(d.Retry), "wait before retrying when gtp5g or a device is gone")
	fs.StringVar(&v.MarkMode, "mark-mode", d.MarkMode, "gtp5g patch mark mode (machine-wide): current (never set it; off classifies by TEID and SDF rules), or set auto (pdr where the module has it, else flow), pdr, flow, qfi, keep")
	fs.StringVar(&v.Classifier, "classifier", d.Classifier, "classifier: "+backends.Choices("classifier")+" (patched gtp5g marks packets); on stock gtp5g the backend classifies by TEID+QFI")
	fs.StringVar(&v.MetricsAddr, "metrics-addr", d.MetricsAddr, "Prometheus listen address (loopback only; 'off' disables)")
	fs.BoolVar(&v.CleanupOnExit, "cleanup-on-exit", false, "remove the trees on SIGTERM/SIGINT (default: leave them shaping)")
	fs.BoolVar(&v.Force, "force", false, "replace a root qdisc gtpqos did not create")
	fs.StringVar(&v.LockDir, "lock-dir", d.LockDir, "directory of the per-device lock files")
	fs.StringVar(&v.EventsBuffer, "events-buffer", "8m", "receive buffer for gtp5g's QoS events (a burst beyond it costs a full dump)")
	fs.StringVar(&v.LogLevel, "log-level", d.LogLevel, "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos watch --n3 IF [--n6 IF] --link-rate R [--config FILE] [flags]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return cfg, "", over, errHelp
		}
		return cfg, "", over, usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return cfg, "", over, usagef("unexpected argument %q", fs.Arg(0))
	}
	over.Set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "config" {
			over.Set[strings.ReplaceAll(f.Name, "-", "_")] = true
		}
	})
	cfg, err = watch.Load(path, over)
	return cfg, path, over, err
}

// errHelp says -h was given and the help printed.
var errHelp = errors.New("help requested")

func runWatch(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, path, over, err := watchFlags(args, stdout)
	if errors.Is(err, errHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := cfg.Check(); err != nil {
		return usagef("%v", err)
	}
	log := logrus.New()
	log.SetOutput(os.Stderr)
	lvl, err := logrus.ParseLevel(cfg.LogLevel)
	if err != nil {
		return usagef("--log-level: %v", err)
	}
	log.SetLevel(lvl)
	d, err := watch.Start(cfg, &logObserver{log: log})
	if err != nil {
		return err
	}
	defer d.Close()
	log.WithField("dev", cfg.N3).Info(d.Mode)
	if d.GCPercent == watch.DaemonGCPercent {
		log.Debug("garbage collector: the heap grows a quarter past what is live, 16 MB at least (set GOGC to choose)")
	} else {
		log.Debugf("garbage collector: GOGC=%d from the environment", d.GCPercent)
	}
	if cfg.MetricsAddr != "" && cfg.MetricsAddr != "off" {
		srv, err := watch.ServeMetrics(cfg.MetricsAddr, d.Metrics())
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
				reload(log, path, over, d)
			}
		}
	}()
	if err := d.Run(ctx); err != nil {
		return err
	}
	if cfg.CleanupOnExit {
		log.Info("stopped; trees removed (--cleanup-on-exit)")
	} else {
		log.Info("stopped; trees left in place, still shaping")
	}
	return nil
}

// reload re-reads the config file (SIGHUP) and hands it to the daemon.
func reload(log *logrus.Logger, path string, over watch.Override, d *watch.Daemon) {
	if path == "" {
		log.Warn("SIGHUP: no --config file to reload")
		return
	}
	cfg, err := watch.Load(path, over)
	var note string
	if err == nil {
		note, err = d.Reload(cfg)
	}
	if err != nil {
		log.WithError(err).Error("SIGHUP: config not reloaded, keeping the running one")
		return
	}
	if note != "" {
		log.Warn("SIGHUP: " + note)
	}
	if lvl, err := logrus.ParseLevel(cfg.LogLevel); err == nil {
		log.SetLevel(lvl)
	}
	log.Infof("SIGHUP: reloaded %s", path)
}

// logObserver logs what the engine does: one info line per change, nothing
// per poll, one line per outage and per recovery.
type logObserver struct {
	log *logrus.Logger
}

// maxChangeLines caps the per-change info lines of one reconcile (a start
// over 10k flows); the rest go to debug after one summary line.
const maxChangeLines = 50

func (o *logObserver) Applied(dev string, res shaper.Report, took time.Duration) {
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
			n-maxChangeLines, res.Flows, res.ClassCount, took.Round(time.Millisecond))
	}
}

func (o *logObserver) Problems(dev string, ps []shaper.Problem) {
	if len(ps) == 0 {
		o.log.WithField("dev", dev).Info("planner problems solved")
		return
	}
	for _, p := range ps {
		e := o.log.WithField("dev", dev)
		if p.Flow != (shaper.FlowID{}) {
			e = e.WithFields(logrus.Fields{"seid": p.Flow.SEID, "qer": p.Flow.QERID})
		}
		e.Warn(p.Severity.String() + ": " + p.Field + ": " + p.Detail)
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

func (o *logObserver) Note(msg string) { o.log.Info(msg) }

// ViewProblems logs the rules the QoS view could not map, once per change
// of the set.
func (o *logObserver) ViewProblems(ps []string) {
	if len(ps) == 0 {
		o.log.Info("qos view: every rule maps to a flow again")
		return
	}
	for _, p := range ps {
		o.log.Warn("qos view: " + p)
	}
}
