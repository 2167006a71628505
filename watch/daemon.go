package watch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/mtu"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
)

// Daemon is `gtpqos watch` put together from a Config: gtp5g's rules as
// the source, one backend per device, the engine, and the metrics. Start
// fails fast, with one error naming the thing at fault, before anything is
// changed.
type Daemon struct {
	cfg    Config
	obs    Observer
	eng    *Engine
	src    *GTP5GSource
	dl, ul shaper.Backend
	shared *backends.Shared
	// marks says whether gtp5g marks the packets (the patch) or not.
	marks backends.Marks
	// startMode is the patched module's mark mode when watch started.
	startMode gtpnl.MarkMode
	metrics   *Metrics
	// Mode says how the daemon follows gtp5g and classifies packets, in
	// one line.
	Mode string
	// GCPercent is the garbage collector's target in force (TuneGC).
	GCPercent int
}

// Start checks the config, gtp5g and the devices, takes the devices'
// locks, sets the gtp5g patch's mark mode, and builds the engine. Nothing
// runs until Run. obs receives what the engine does (nil: discarded).
func Start(cfg Config, obs Observer) (*Daemon, error) {
	if obs == nil {
		obs = nopObserver{}
	}
	d := &Daemon{cfg: cfg, obs: obs, metrics: NewMetrics()}
	dlPol, ulPol, err := cfg.Policies()
	if err != nil {
		return nil, err
	}
	eventsBuffer, err := cfg.eventsBuffer()
	if err != nil {
		return nil, err
	}
	if err := checkMarkModeName(cfg.MarkMode); err != nil {
		return nil, fmt.Errorf("mark mode: %w", err)
	}
	// gtp5g first: without it nothing else matters.
	gc, err := gtpnl.Dial()
	if err != nil {
		return nil, err // "gtp5g module not loaded"
	}
	defer gc.Close()
	feats, err := gc.Features()
	if err != nil {
		return nil, fmt.Errorf("gtp5g features: %w", err)
	}
	patched := feats.Has(gtpnl.FeatureFlowMark | gtpnl.FeatureQoSEvents)
	if err := d.chooseMarks(gc, patched, feats); err != nil {
		return nil, err
	}
	// The backend says how it will find each packet's flow, or why it
	// cannot with this gtp5g.
	binding, err := backends.Check(dlPol, backends.Options{Backend: cfg.Policy.Backend, Marks: d.marks, Shared: d.shared})
	if err != nil {
		return nil, fmt.Errorf("gtp5g features %s: %w", feats, err)
	}
	// The devices must exist, and no other writer (another watch, an
	// apply, a reset) may hold them: opening the backends as the writer
	// takes each device's lock, for the daemon's lifetime, before the
	// mark mode changes.
	if err := d.openBackends(&dlPol); err != nil {
		d.Close()
		return nil, err
	}
	// A classifier or leaf the kernel lacks is refused now, not at the
	// first reconcile.
	if err := d.precheck(dlPol, ulPol); err != nil {
		d.Close()
		return nil, err
	}
	markMode, err := d.markMode(gc, feats, patched, binding)
	if err != nil {
		d.Close()
		return nil, err
	}
	// Fragments on N3 break packet accounting and the GTP-U classifier.
	if ws, err := mtu.Warnings(0, cfg.N3); err == nil {
		for _, w := range ws {
			obs.Note("warning: " + w)
		}
	}
	d.src = d.source(patched, markMode, feats)
	d.src.EventsBuffer = eventsBuffer
	d.GCPercent = TuneGC()
	opt := Options{Source: d.src, Downlink: d.dl, DownlinkPolicy: dlPol, Poll: time.Duration(cfg.Poll),
		Resync: time.Duration(cfg.Resync), Retry: time.Duration(cfg.Retry), Observer: obs, Metrics: d.metrics,
		ReleaseMemory: true}
	if d.ul != nil {
		opt.Uplink, opt.UplinkPolicy = d.ul, ulPol
	}
	if d.eng, err = New(opt); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// markMode sets the patched module's mark mode (refusing qfi where flows
// would merge), and says in d.Mode how the daemon follows gtp5g and how
// the backend binds packets to their classes (binding, from
// backends.Check).
func (d *Daemon) markMode(gc *gtpnl.Client, feats gtpnl.Features, patched bool, binding string) (gtpnl.MarkMode, error) {
	cfg := d.cfg
	if !patched {
		d.Mode = fmt.Sprintf("mode: polling every %s (stock gtp5g, features %s: no QoS events), %s",
			time.Duration(cfg.Poll), feats, binding)
		return gtpnl.MarkOff, nil
	}
	if d.unmarked() {
		d.Mode = fmt.Sprintf("mode: polling every %s (gtp5g patch, features %s, mark mode off, left as it is: it is machine-wide; --mark-mode auto sets pdr), %s",
			time.Duration(cfg.Poll), feats, binding)
		return gtpnl.MarkOff, nil
	}
	line, mode, err := ensureMarkMode(gc, cfg.MarkMode, feats)
	if err != nil {
		return 0, err
	}
	d.Mode = fmt.Sprintf("mode: events (%s), %s", line, binding)
	return mode, nil
}

// openBackends opens the N3 (downlink) and N6 (uplink) backends, in
// incremental mode, set up for pol and for what gtp5g's packets carry
// (sharing what they share on stock gtp5g), as the devices' writer: each
// holds its device's lock until Close.
func (d *Daemon) openBackends(pol *shaper.Policy) error {
	o := backends.Options{Backend: d.cfg.Policy.Backend, Force: d.cfg.Force, Incremental: true, N3: d.cfg.N3,
		Policy: pol, Marks: d.marks, Shared: d.shared, Writer: "watch", LockDir: d.cfg.LockDir,
		OnPool: func(dev string, ready, want int) {
			d.metrics.spares(dev, ready)
			d.obs.Note(fmt.Sprintf("dev %s: %d of %d spare classes ready", dev, ready, want))
		}}
	var err error
	o.Direction, o.WriterRole = shaper.Downlink, "n3"
	if d.dl, err = backends.Open(d.cfg.N3, o); err != nil {
		return err
	}
	if d.cfg.N6 != "" {
		o.Direction, o.WriterRole = shaper.Uplink, "n6"
		if d.ul, err = backends.Open(d.cfg.N6, o); err != nil {
			return err
		}
	}
	return nil
}

// precheck asks each backend whether the kernel can enforce its policy.
func (d *Daemon) precheck(dl, ul shaper.Policy) error {
	for _, c := range []struct {
		be  shaper.Backend
		pol shaper.Policy
	}{{d.dl, dl}, {d.ul, ul}} {
		if pc, ok := c.be.(shaper.Prechecker); ok && c.be != nil {
			if err := pc.Precheck(context.Background(), c.pol); err != nil {
				return err
			}
		}
	}
	return nil
}

// source is gtp5g through gtpnl: with the patch, events and the module's
// marks; without, polling, with uplink marks of gtpqos's own for the GTP-U
// classifier. A reloaded patched module gets its mark mode back.
func (d *Daemon) source(patched bool, mode gtpnl.MarkMode, feats gtpnl.Features) *GTP5GSource {
	var first atomic.Bool // the source's first dial follows Start's checks
	first.Store(true)
	var marks qosview.UplinkMarks
	// Without marks on the wire (stock gtp5g, or the patch left in mode
	// off) every view is a whole dump: the uplink marks and SDF rules are
	// assigned over all flows, so events (partial views) are not used.
	unmarked := !patched || d.unmarked()
	return &GTP5GSource{
		Dial: gtpnl.Dial,
		View: func(qers []gtpnl.QER, pdrs []gtpnl.PDR, fars []gtpnl.FAR) ([]shaper.Flow, []qosview.Problem) {
			flows, problems := qosview.Build(qers, pdrs, fars, qosview.Options{MarkMode: mode})
			if unmarked {
				flows = marks.Assign(flows)
				problems = append(problems, d.setSDF(pdrs, fars, flows)...)
			}
			return flows, problems
		},
		WithEvents:     !unmarked,
		OnViewProblems: d.obs.ViewProblems,
		OnConnect: func(c *gtpnl.Client) error {
			if !patched || first.Swap(false) {
				return nil
			}
			// gtp5g was reloaded: a fresh module marks nothing.
			if d.cfg.MarkMode == "current" {
				return d.sameMarkMode(c)
			}
			line, _, err := ensureMarkMode(c, d.cfg.MarkMode, feats)
			if err == nil {
				d.obs.Note("gtp5g reconnected: " + line)
			}
			return err
		},
	}
}

// Metrics returns the daemon's metrics.
func (d *Daemon) Metrics() *Metrics { return d.metrics }

// Run keeps the trees in step until ctx is done. With CleanupOnExit it then
// removes them; otherwise they stay, shaping.
func (d *Daemon) Run(ctx context.Context) error {
	if err := d.eng.Run(ctx); err != nil {
		return err
	}
	if !d.cfg.CleanupOnExit {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return d.eng.Cleanup(cctx)
}

// Reload applies a re-read config: policies and rates at once (with a full
// resync); a change of device, metrics address or lock directory needs a
// restart, which the returned note says. A config that does not load
// leaves the running one in place.
func (d *Daemon) Reload(cfg Config) (note string, err error) {
	dl, ul, err := cfg.Policies()
	if err != nil {
		return "", err
	}
	// The classification mode is the daemon's, not the file's.
	if cur, ok := d.eng.Policy(shaper.Downlink); ok {
		dl, ul = backends.KeepBinding(cur, dl), backends.KeepBinding(cur, ul)
	}
	d.eng.SetPolicies(dl, ul)
	if cfg.N3 != d.cfg.N3 || cfg.N6 != d.cfg.N6 || cfg.MetricsAddr != d.cfg.MetricsAddr || cfg.LockDir != d.cfg.LockDir ||
		cfg.Policy.Backend != d.cfg.Policy.Backend {
		note = "device, backend, metrics or lock changes need a restart; applied rates and policy only"
	}
	d.eng.RequestResync()
	return note, nil
}

// Close releases the source and the backends (and with them the device
// locks).
func (d *Daemon) Close() error {
	var errs []error
	if d.src != nil {
		errs = append(errs, d.src.Close())
	}
	for _, b := range []shaper.Backend{d.dl, d.ul} {
		if b != nil {
			errs = append(errs, b.Close())
		}
	}
	return errors.Join(errs...)
}

// ensureMarkMode sets the patch's mark mode unless it is already what the
// operator wants ("auto": pdr where the module offers it, else flow;
// "keep": anything but off is kept, off becomes what auto picks).
func ensureMarkMode(gc *gtpnl.Client, want string, feats gtpnl.Features) (string, gtpnl.MarkMode, error) {
	cur, err := gc.MarkMode()
	if err != nil {
		return "", 0, fmt.Errorf("gtp5g mark mode: %w", err)
	}
	target := targetMarkMode(want, cur, feats)
	if target == cur {
		return fmt.Sprintf("gtp5g patch, features %s, mark mode %s already set", feats, cur), cur, nil
	}
	if err := gc.SetMarkMode(target); err != nil {
		return "", 0, fmt.Errorf("set gtp5g mark mode %s: %w", target, err)
	}
	return fmt.Sprintf("gtp5g patch, features %s, mark mode %s -> %s", feats, cur, target), target, nil
}

// targetMarkMode is the mode ensureMarkMode sets: for current, the
// module's own; for auto, pdr where the module offers it (one mark per PDR:
// one class per QoS flow whatever the order of its QERs), else flow.
func targetMarkMode(want string, cur gtpnl.MarkMode, feats gtpnl.Features) gtpnl.MarkMode {
	auto := gtpnl.MarkFlow
	if feats.Has(gtpnl.FeaturePDRMark) {
		auto = gtpnl.MarkPDR
	}
	switch want {
	case "current":
		return cur
	case "auto":
		return auto
	case "keep":
		if cur == gtpnl.MarkOff {
			return auto
		}
		return cur
	}
	m, _ := gtpnl.ParseMarkMode(want)
	return m
}

// checkQFIMode refuses mark mode qfi, before anything changes, when the
// rules gtp5g holds would put two QoS flows behind one mark (flows of two
// sessions on one QFI, or a non-GBR flow going out with the default QFI).
func checkQFIMode(gc *gtpnl.Client, want string, feats gtpnl.Features) error {
	cur, err := gc.MarkMode()
	if err != nil {
		return fmt.Errorf("gtp5g mark mode: %w", err)
	}
	if targetMarkMode(want, cur, feats) != gtpnl.MarkQFI {
		return nil
	}
	qers, err := gc.QERs()
	if err != nil {
		return fmt.Errorf("gtp5g QERs: %w", err)
	}
	pdrs, err := gc.PDRs()
	if err != nil {
		return fmt.Errorf("gtp5g PDRs: %w", err)
	}
	fars, err := gc.FARs()
	if err != nil {
		return fmt.Errorf("gtp5g FARs: %w", err)
	}
	_, problems := qosview.Build(qers, pdrs, fars, qosview.Options{MarkMode: gtpnl.MarkQFI})
	return qfiMerges(problems, feats)
}

// qfiMerges is checkQFIMode's verdict on the view's problems: one line
// naming the flows that would share a mark, or nil.
func qfiMerges(problems []qosview.Problem, feats gtpnl.Features) error {
	var merged []string
	for _, p := range problems {
		if p.Kind == qosview.SharedMark {
			merged = append(merged, p.Detail)
		}
	}
	if len(merged) == 0 {
		return nil
	}
	alt := "flow"
	if feats.Has(gtpnl.FeaturePDRMark) {
		alt = "pdr"
	}
	more := ""
	if len(merged) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(merged)-1)
	}
	return fmt.Errorf("mark mode qfi would enforce %d QoS flows in another flow's class: %s%s; use --mark-mode %s", len(merged), merged[0], more, alt)
}
