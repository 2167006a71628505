package ab

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
)

// Hooks tell the caller what building and removing a target did, for it
// to show; nil fields are skipped.
type Hooks struct {
	// Progress receives one line per step (the lab coming up).
	Progress func(format string, args ...any)
	// Failed receives a clean-up step that failed and why; the steps
	// after it still run.
	Failed func(step string, err error)
	// Note receives a device target's remark on what the experiment left
	// on the device.
	Note func(dev, note string)
}

func (h Hooks) progress(format string, args ...any) {
	if h.Progress != nil {
		h.Progress(format, args...)
	}
}

func (h Hooks) failed(step string, err error) {
	if err != nil && h.Failed != nil {
		h.Failed(step, err)
	}
}

// closeTimeout bounds a target's clean-up, which runs even after the
// experiment's context is cancelled (Ctrl-C).
const closeTimeout = 15 * time.Second

// undoList runs clean-up steps last first.
type undoList []func()

func (u *undoList) add(f func()) { *u = append(*u, f) }

func (u undoList) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// OpenTarget builds the target s asks for: a lab (s.Lab) or the device
// s.Dev, with s.Classifier and s.Leaf overriding the arms' kinds. On a
// device it lets o's arms switch gtp5g's native policer (UsePolicer),
// holds the device's lock as writer "ab" like apply does (so a device a
// watch manages is refused with the lock's error), and leaves a tree the
// device had before in place. closeAll removes what the experiment
// created, also after ctx is cancelled, and puts the native policer back;
// on error, what was built is removed before OpenTarget returns.
func OpenTarget(ctx context.Context, s Spec, o *Options, h Hooks) (t Target, closeAll func(), err error) {
	var bo backends.Options
	if bo.Knobs, err = overrides(s); err != nil {
		return nil, nil, err
	}
	var undo undoList
	defer func() {
		if err != nil {
			undo.run()
		}
	}()
	if s.Lab {
		t, err = openLab(s, bo, h, &undo)
	} else {
		t, err = openDevice(ctx, s, bo, o, h, &undo)
	}
	if err != nil {
		return nil, nil, err
	}
	undo.add(func() { closeTarget(ctx, t, h) })
	return t, undo.run, nil
}

// openLab builds the lab s asks for and a target on it.
func openLab(s Spec, bo backends.Options, h Hooks, undo *undoList) (Target, error) {
	cfg := lab.Config{NoMarks: s.NoMarks}
	if s.LabPDRs != "" {
		var err error
		if cfg.PDRs, err = lab.LoadPDRs(s.LabPDRs); err != nil {
			return nil, err
		}
	}
	l, err := newLab(cfg, h, undo)
	if err != nil {
		return nil, err
	}
	payload := s.Payload
	if s.TCP {
		payload = 0
	}
	return NewLabTarget(l, LabOptions{TCP: s.TCP, Payload: payload, Generator: s.Traffic, Backend: bo, NoMarks: s.NoMarks})
}

// newLab builds a lab and adds its removal to undo.
func newLab(cfg lab.Config, h Hooks, undo *undoList) (*lab.Lab, error) {
	l, err := lab.New(cfg)
	if err != nil {
		return nil, err
	}
	undo.add(func() { h.failed("lab clean-up", l.Close()) })
	h.progress("lab up: netns %s, N3 dev %s, rate scale %g", strings.Join(l.Namespaces(), " "), lab.N3Dev, l.Scale())
	return l, nil
}

// openDevice opens s.Dev as the experiment's target.
func openDevice(ctx context.Context, s Spec, bo backends.Options, o *Options, h Hooks, undo *undoList) (Target, error) {
	if s.Dev == "" {
		return nil, usagef("give --lab, or --dev IFACE to run on a real UPF's device")
	}
	restore, err := UsePolicer(o)
	undo.add(func() { h.failed("restore gtp5g native policer", restore()) })
	if err != nil {
		return nil, err
	}
	bo.Writer = "ab"
	dt, err := NewDeviceTarget(ctx, s.Dev, bo)
	if err != nil {
		return nil, err
	}
	undo.add(func() {
		if dt.Note != "" && h.Note != nil {
			h.Note(s.Dev, dt.Note)
		}
	})
	return dt, nil
}

// closeTarget removes the experiment's tree, even after ctx is cancelled.
func closeTarget(ctx context.Context, t Target, h Hooks) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	h.failed("remove the experiment's tree", t.Close(c))
}

// SweepScale is the lab's rate scale for a sweep when lab.RateScaleEnv is
// not set: the user-space UPF and gNB stand-ins carry the scenarios'
// offered load at 64-byte payloads there.
const SweepScale = 0.1

// OpenSweepTarget builds a sweep's lab (N3 queue SweepQueueLen, rate scale
// SweepScale unless lab.RateScaleEnv sets one) and a target on it.
// closeAll removes the tree and the lab, also after ctx is cancelled; on
// error, what was built is removed before OpenSweepTarget returns.
func OpenSweepTarget(ctx context.Context, h Hooks) (t *LabTarget, closeAll func(), err error) {
	cfg := lab.Config{N3QueueLen: SweepQueueLen}
	if os.Getenv(lab.RateScaleEnv) == "" {
		cfg.RateScale = SweepScale
	}
	var undo undoList
	defer func() {
		if err != nil {
			undo.run()
		}
	}()
	l, err := newLab(cfg, h, &undo)
	if err != nil {
		return nil, nil, err
	}
	if t, err = NewLabTarget(l, LabOptions{Generator: lab.TrafficBuiltin}); err != nil {
		return nil, nil, err
	}
	undo.add(func() { closeTarget(ctx, t, h) })
	return t, undo.run, nil
}

// overrides are the backend knobs --classifier and --leaf set for every
// arm, each checked by the backend (errors name the flag).
func overrides(s Spec) (shaper.Knobs, error) {
	k := shaper.Knobs{}
	for _, o := range []struct{ knob, v string }{{"classifier", s.Classifier}, {"leaf", s.Leaf}} {
		if o.v == "" {
			continue
		}
		if _, err := backends.Override(shaper.DefaultPolicy(1), shaper.Knobs{o.knob: o.v}); err != nil {
			return nil, usagef("--%v", err)
		}
		k[o.knob] = o.v
	}
	return k, nil
}
