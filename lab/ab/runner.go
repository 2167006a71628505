package ab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// Validate checks the protocol and fills defaults.
func (o *Options) Validate() error {
	if len(o.Arms) == 0 {
		return errors.New("no arms to run")
	}
	names := map[string]bool{}
	for i, a := range o.Arms {
		if a.Name == "" {
			return fmt.Errorf("arm %d (%s): no name", i+1, a.Source)
		}
		if names[a.Name] {
			return fmt.Errorf("arm %q given twice", a.Name)
		}
		names[a.Name] = true
		if len(a.Flows) == 0 {
			return fmt.Errorf("arm %s (%s): no flows", a.Name, a.Source)
		}
		switch a.Policer {
		case "", "on", "off":
		default:
			return fmt.Errorf("arm %s: policer %q: want on, off or empty", a.Name, a.Policer)
		}
		if a.Policer != "" && o.SetPolicer == nil {
			return fmt.Errorf("arm %s: policer %s asked for, but gtp5g's native policer is not available here", a.Name, a.Policer)
		}
	}
	if o.Runs < 1 {
		return fmt.Errorf("runs %d: want at least 1", o.Runs)
	}
	if o.Duration < 2*time.Second {
		return fmt.Errorf("duration %v: want at least 2s", o.Duration)
	}
	if o.WindowStart < 0 || o.WindowEnd <= o.WindowStart || o.WindowEnd > o.Duration {
		return fmt.Errorf("window %v-%v: want 0 <= from < to <= duration %v", o.WindowStart, o.WindowEnd, o.Duration)
	}
	if o.WindowStart%time.Second != 0 || o.WindowEnd%time.Second != 0 {
		return fmt.Errorf("window %v-%v: want whole seconds", o.WindowStart, o.WindowEnd)
	}
	if o.Tolerance < 0 || o.Tolerance >= 1 {
		return fmt.Errorf("tolerance %v: want 0 <= t < 1", o.Tolerance)
	}
	return nil
}

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

// Run runs the experiment on t: Runs rounds, each applying every arm in
// order (A B A B ...). It returns what it measured so far with ctx's error
// when cancelled.
func Run(ctx context.Context, t Target, o Options) (*Results, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	res := &Results{Target: t.Describe(), Started: time.Now(), Runs: o.Runs,
		DurationS: o.Duration.Seconds(), WindowFrom: int(o.WindowStart / time.Second), WindowTo: int(o.WindowEnd / time.Second),
		Tolerance: o.Tolerance, Payload: o.Payload, Proto: "udp", Generator: o.Generator, RateScale: t.Scale()}
	if o.TCP {
		res.Proto = "tcp"
	}
	total := o.Runs * len(o.Arms)
	for r := 1; r <= o.Runs; r++ {
		for _, arm := range o.Arms {
			n := len(res.RunList) + 1
			o.progress("run %d/%d: arm %s, round %d", n, total, arm.Name, r)
			run, err := runOne(ctx, t, &o, arm, r)
			if err != nil && ctx.Err() != nil {
				return res, fmt.Errorf("interrupted in arm %s run %d: %w", arm.Name, r, ctx.Err())
			}
			if err != nil {
				return res, fmt.Errorf("arm %s run %d: %w", arm.Name, r, err)
			}
			res.RunList = append(res.RunList, run)
			o.progress("  %s", runLine(run))
			for _, n := range run.Notes {
				o.progress("  note: %s", n)
			}
			if o.Pause > 0 && n < total {
				select {
				case <-ctx.Done():
					return res, ctx.Err()
				case <-time.After(o.Pause):
				}
			}
		}
	}
	res.CountersOnly = len(res.RunList) > 0 && res.RunList[0].Flows[0].Series == nil
	res.Arms = Summarise(res, o.Arms, t.Scale())
	return res, nil
}

func runLine(r RunResult) string {
	s := ""
	for _, f := range r.Flows {
		s += fmt.Sprintf("%s %.3f  ", f.Name, f.Goodput)
	}
	return fmt.Sprintf("%saggregate %.3f Mbit/s, N3 frame %.1f B", s, r.Aggregate, r.Frame)
}

// sleepUntil waits for t or ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	tm := time.NewTimer(time.Until(t))
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

func runOne(ctx context.Context, t Target, o *Options, arm Arm, index int) (RunResult, error) {
	run := RunResult{Arm: arm.Name, Index: index, Backend: armBackend(arm)}
	if arm.Policer != "" {
		if err := o.SetPolicer(arm.Policer == "on"); err != nil {
			return run, fmt.Errorf("native policer %s: %w", arm.Policer, err)
		}
	}
	rep, err := t.Apply(ctx, arm)
	if err != nil {
		return run, err
	}
	run.Apply = rep.Summary
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now().Add(100 * time.Millisecond)
	run.Started = start
	type trafficResult struct {
		m   map[string]FlowTraffic
		err error
	}
	done := make(chan trafficResult, 1)
	go func() {
		m, err := t.Traffic(ctx, arm, start, o.Duration)
		done <- trafficResult{m, err}
	}()
	sample := func(at time.Time) (map[string]shaper.Counters, time.Time, error) {
		if err := sleepUntil(ctx, at); err != nil {
			return nil, time.Time{}, err
		}
		s, err := t.Counters(ctx)
		return s, time.Now(), err
	}
	s1, t1, err1 := sample(start.Add(o.WindowStart))
	var s2 map[string]shaper.Counters
	var t2 time.Time
	if err1 == nil {
		s2, t2, err1 = sample(start.Add(o.WindowEnd))
	}
	if err1 != nil {
		cancel()
		<-done
		return run, fmt.Errorf("class counters: %w", err1)
	}
	tr := <-done
	if tr.err != nil {
		return run, fmt.Errorf("traffic: %w", tr.err)
	}
	measure(&run, o, arm, rep, t.Scale(), s1, s2, t2.Sub(t1), tr.m)
	if n, ok := t.(interface{ RunNotes() []string }); ok {
		run.Notes = n.RunNotes()
	}
	return run, nil
}
