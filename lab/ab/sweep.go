package ab

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// A sweep measures, in the lab, how exactly the shaper keeps contracts as
// packets shrink: each scenario runs at each payload size with packet and
// frame accounting side by side, and every flow's rate is judged on the
// user's IP packets, as a QER's GBR and MBR count.

// Scenario is one contract test of a sweep, on the lab's seed flows A, B,
// C (rates in bit/s before the lab's rate scale).
type Scenario struct {
	// Name is the scenario's key ("mbr"); Title says what it tests.
	Name, Title string
	// Link is the bottleneck rate.
	Link uint64
	// Flows are the contracts; Offered the flows that send and their
	// offered rates in bit/s of the user's IP packets (nil: all three seed
	// flows at the lab's default 30 Mbit/s of payload).
	Flows   []shaper.Flow
	Offered map[string]float64
	// check judges one run: flows by name, rates at the lab's scale.
	check func(c sweepCase, f map[string]FlowRun) []Check
}

// sweepCase is what a scenario's check needs to know about its run.
type sweepCase struct {
	payload int
	scale   float64
	tol     float64
}

// mbit scales a rate of the scenarios (Mbit/s) to the lab.
func (c sweepCase) mbit(v float64) float64 { return v * c.scale }

// within checks that got is want ± tol (relative).
func within(name string, got, want, tol float64) Check {
	err := got/want - 1
	return Check{Name: name, OK: want > 0 && math.Abs(err) <= tol,
		Detail: fmt.Sprintf("%.4f Mbit/s of IP packets, %+.2f%% of %g", got, 100*err, round3(want))}
}

// seedFlow is one of the lab's seed flows (SEID 1, QFI = mark = 2, 3, 4)
// with a contract in Mbit/s.
func seedFlow(name string, gbr, mbr float64) shaper.Flow {
	i := uint32(name[0] - 'A')
	return shaper.Flow{ID: shaper.FlowID{SEID: 1, QERID: i + 1}, Name: name, QFI: uint8(i + 2), Direction: shaper.Downlink,
		GBR: uint64(gbr * 1e6), MBR: uint64(mbr * 1e6), Mark: i + 2}
}

// The contracts of the MBR and GBR scenarios (bit/s before the rate
// scale).
const (
	MBRScenarioMBR = 15e6
	GBRScenarioGBR = 6e6
)

// SweepQueueLen is the N3 txqueuelen of a sweep's lab (HTB's built-in
// pfifo's packet limit, and its direct queue's); the FIFO leaves the
// sweep's trees get are sized by RateBudget.
const SweepQueueLen = 300

// RateBudget is the delay budget of the lab's rate experiments (the
// sweep's scenarios, the seed's rate tests): a FIFO leaf holding half a
// second keeps the link busy through a stall of the user-space UPF
// stand-in on a loaded host, so a rate is measured rather than a stall,
// and the MBR scenario's leaf, offered twice its MBR, still fills and
// drops within the first half second at every packet size.
const RateBudget = 500 * time.Millisecond

// Scenarios are the sweep's contract tests.
var Scenarios = []Scenario{
	{
		// A link the two flows cannot fill: only the MBRs limit them.
		Name: "mbr", Title: "MBR 15 offered 2× (A) and 0.99× (B), uncongested link", Link: 60e6,
		Flows:   []shaper.Flow{seedFlow("A", 0, MBRScenarioMBR/1e6), seedFlow("B", 0, MBRScenarioMBR/1e6)},
		Offered: map[string]float64{"A": 2 * MBRScenarioMBR, "B": 0.99 * MBRScenarioMBR},
		check: func(c sweepCase, f map[string]FlowRun) []Check {
			a, b := f["A"], f["B"]
			drop := Check{Name: "A: 50% ±1% of its offer dropped", OK: a.LossFrac >= 0 && math.Abs(a.LossFrac-0.5) <= 0.01,
				Detail: fmt.Sprintf("%.2f%% dropped (%d packets)", 100*a.LossFrac, a.Lost)}
			// The class's own drop counter judges the shaper; the receiver's
			// losses (reported) may include the stand-ins'.
			lossless := Check{Name: "B: offered 0.99 × MBR, the shaper drops nothing", OK: b.Class != "" && b.Drops == 0,
				Detail: fmt.Sprintf("class dropped %d, receiver lost %d packets, %.4f Mbit/s of IP packets", b.Drops, b.Lost, b.IP)}
			return []Check{within("A: offered 2 × MBR, receives its MBR ±1%", a.IP, c.mbit(MBRScenarioMBR/1e6), c.tol), drop, lossless}
		},
	},
	{
		Name: "gbr", Title: "GBR = MBR 6 (A, offered 2×) next to a greedy best-effort flow (C, offered 2 × link)", Link: 30e6,
		Flows:   []shaper.Flow{seedFlow("A", GBRScenarioGBR/1e6, GBRScenarioGBR/1e6), seedFlow("C", 0, 0)},
		Offered: map[string]float64{"A": 2 * GBRScenarioGBR, "C": 60e6},
		check: func(c sweepCase, f map[string]FlowRun) []Check {
			return []Check{within("A: receives its GBR ±1% under congestion", f["A"].IP, c.mbit(GBRScenarioGBR/1e6), c.tol)}
		},
	},
	{
		Name: "seed", Title: "the seed's aware arm (A 15/18, B 5/6, C best effort, 30 Mbit/s of payload offered each)", Link: 30e6,
		Flows: []shaper.Flow{seedFlow("A", 15, 18), seedFlow("B", 5, 6), seedFlow("C", 0, 30)},
		check: seedCheck,
	},
}

// seedCheck judges the seed's aware arm: A and B inside their contracts
// at every size; at the seed's payload (1200 bytes, where the link leaves
// B room above its GBR), B at its MBR ±1% and A at least its GBR.
func seedCheck(c sweepCase, f map[string]FlowRun) []Check {
	a, b := f["A"], f["B"]
	in := func(name string, r FlowRun, gbr, mbr float64) Check {
		ok := r.IP >= c.mbit(gbr)*(1-c.tol) && r.IP <= c.mbit(mbr)*(1+c.tol)
		return Check{Name: name, OK: ok, Detail: fmt.Sprintf("%.4f Mbit/s of IP packets, contract %g..%g", r.IP, round3(c.mbit(gbr)), round3(c.mbit(mbr)))}
	}
	cs := []Check{in("A: between its GBR and MBR (±1%)", a, 15, 18), in("B: between its GBR and MBR (±1%)", b, 5, 6)}
	if c.payload == 1200 {
		cs = append(cs, within("B: at its MBR ±1% (the seed's table)", b.IP, c.mbit(6), c.tol))
	}
	return cs
}

// SweepOptions are a sweep's protocol.
type SweepOptions struct {
	// Payloads are the UDP payload sizes in bytes.
	Payloads []int
	// Scenarios are the scenario names to run (nil: all).
	Scenarios []string
	// Units are the accountings to compare (nil: packet and frame).
	Units []shaper.Accounting
	// Backends run every unit side by side (nil: the default); with more
	// than one, a run's unit is named UNIT/BACKEND.
	Backends []string
	// Duration and the analysis window of each run.
	Duration, WindowStart, WindowEnd time.Duration
	// Tolerance is the contracts' tolerance (0.01: ±1%).
	Tolerance float64
	// Pause between runs.
	Pause time.Duration
	// Progress, if set, receives one line per step.
	Progress func(format string, args ...any)
}

// SweepRun is one scenario at one payload size and accounting.
type SweepRun struct {
	Scenario string    `json:"scenario"`
	Payload  int       `json:"payload_bytes"`
	Unit     string    `json:"accounting"`
	Backend  string    `json:"backend"`
	Flows    []FlowRun `json:"flows"`
	Checks   []Check   `json:"checks"`
	Notes    []string  `json:"notes,omitempty"`
}

// SweepResults is everything a sweep produced.
type SweepResults struct {
	Target    string     `json:"target"`
	Started   time.Time  `json:"started"`
	RateScale float64    `json:"rate_scale"`
	DurationS float64    `json:"duration_s"`
	WindowS   [2]int     `json:"window_s"`
	Tolerance float64    `json:"tolerance"`
	Runs      []SweepRun `json:"runs"`
}

// Sweep runs the scenarios at every payload size on a lab target, each
// with every accounting unit.
func Sweep(ctx context.Context, t *LabTarget, o SweepOptions) (*SweepResults, error) {
	scs, err := o.scenarios()
	if err != nil {
		return nil, err
	}
	units := o.Units
	if units == nil {
		units = []shaper.Accounting{shaper.AccountPacket, shaper.AccountFrame}
	}
	res := &SweepResults{Target: t.Describe(), Started: time.Now(), RateScale: t.Scale(), DurationS: o.Duration.Seconds(),
		WindowS: [2]int{int(o.WindowStart / time.Second), int(o.WindowEnd / time.Second)}, Tolerance: o.Tolerance}
	for _, p := range o.Payloads {
		t.SetPayload(p)
		for _, sc := range scs {
			runs, err := sweepOne(ctx, t, &o, sc, p, units)
			res.Runs = append(res.Runs, runs...)
			if err != nil {
				return res, fmt.Errorf("scenario %s, payload %d: %w", sc.Name, p, err)
			}
		}
	}
	return res, nil
}

func (o *SweepOptions) scenarios() ([]Scenario, error) {
	if len(o.Payloads) == 0 {
		return nil, errors.New("sweep: no payload sizes")
	}
	if o.Scenarios == nil {
		return Scenarios, nil
	}
	var out []Scenario
	for _, name := range o.Scenarios {
		found := false
		for _, sc := range Scenarios {
			if sc.Name == name {
				out, found = append(out, sc), true
			}
		}
		if !found {
			return nil, fmt.Errorf("sweep: unknown scenario %q (want mbr, gbr or seed)", name)
		}
	}
	return out, nil
}

// sweepOne runs one scenario at one payload size, one run per unit, each
// on a freshly built tree (so no packet of the previous run is still
// queued in a leaf).
func sweepOne(ctx context.Context, t *LabTarget, o *SweepOptions, sc Scenario, payload int, units []shaper.Accounting) ([]SweepRun, error) {
	o.progress("payload %d bytes: %s", payload, sc.Title)
	c := sweepCase{payload: payload, scale: t.Scale(), tol: o.Tolerance}
	var out []SweepRun
	for _, u := range units {
		pol := shaper.DefaultPolicy(sc.Link)
		pol.Accounting, pol.DelayBudget = u, RateBudget
		for _, arm := range WithBackends([]Arm{{Name: u.String(), Source: "scenario " + sc.Name, Flows: sc.Flows, Policy: pol, Offered: sc.Offered}}, o.Backends) {
			sr, err := sweepArm(ctx, t, o, sc, c, arm)
			if sr.Scenario != "" {
				out = append(out, sr)
			}
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// sweepArm runs one scenario's arm once on a freshly built tree.
func sweepArm(ctx context.Context, t *LabTarget, o *SweepOptions, sc Scenario, c sweepCase, arm Arm) (SweepRun, error) {
	if err := t.Reset(ctx); err != nil {
		return SweepRun{}, err
	}
	res, err := Run(ctx, t, Options{Arms: []Arm{arm}, Runs: 1, Duration: o.Duration, WindowStart: o.WindowStart, WindowEnd: o.WindowEnd,
		Tolerance: o.Tolerance, Payload: c.payload, Generator: "builtin", Progress: o.Progress})
	if err != nil {
		return SweepRun{}, err
	}
	r := res.RunList[0]
	byName := map[string]FlowRun{}
	for _, f := range r.Flows {
		byName[f.Name] = f
	}
	sr := SweepRun{Scenario: sc.Name, Payload: c.payload, Unit: r.Arm, Backend: r.Backend, Flows: r.Flows, Checks: sc.check(c, byName), Notes: r.Notes}
	for _, ch := range sr.Checks {
		o.progress("  %s %s: %s: %s", sr.Unit, verdictWord(ch.OK), ch.Name, ch.Detail)
	}
	if o.Pause > 0 {
		select {
		case <-ctx.Done():
			return sr, ctx.Err()
		case <-time.After(o.Pause):
		}
	}
	return sr, nil
}

func (o *SweepOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

func verdictWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}
