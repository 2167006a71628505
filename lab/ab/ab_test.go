package ab

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// seedArms returns the seed's static and aware arms.
func seedArms() []Arm {
	flows := []shaper.Flow{
		{ID: shaper.FlowID{SEID: 1, QERID: 1}, Name: "A", QFI: 2, Direction: shaper.Downlink, GBR: 15e6, MBR: 18e6, Mark: 2},
		{ID: shaper.FlowID{SEID: 1, QERID: 2}, Name: "B", QFI: 3, Direction: shaper.Downlink, GBR: 5e6, MBR: 6e6, Mark: 3},
		{ID: shaper.FlowID{SEID: 1, QERID: 3}, Name: "C", QFI: 4, Direction: shaper.Downlink, MBR: 30e6, Mark: 4},
	}
	st := shaper.DefaultPolicy(30e6)
	st.Mode = shaper.Static
	return []Arm{{Name: "static", Flows: flows, Policy: st}, {Name: "aware", Flows: flows, Policy: shaper.DefaultPolicy(30e6)}}
}

// fakeRun makes a run of 1200-byte payloads under packet accounting whose
// flows got the given goodputs for 20 seconds.
func fakeRun(arm string, idx int, gbr, mbr []float64, goodput ...float64) RunResult {
	r := RunResult{Arm: arm, Index: idx, Frame: 1286, Counted: 1228, Accounting: "packet", Overhead: 58}
	for i, g := range goodput {
		series := make([]float64, 20)
		for s := range series {
			series[s] = g
		}
		f := FlowRun{Name: string(rune('A' + i)), GBR: gbr[i], MBR: mbr[i], Goodput: g, IP: g * 1228 / 1200, Outer: g * 1286 / 1200,
			Frame: 1286, Counted: 1228, Series: series}
		r.Flows = append(r.Flows, f)
		r.Aggregate += g
	}
	return r
}

func seedResults(staticA, awareB float64) *Results {
	gbr, mbr := []float64{15, 5, 0}, []float64{18, 6, 30}
	res := &Results{Runs: 2, DurationS: 20, WindowFrom: 5, WindowTo: 15, Tolerance: 0.05, Payload: 1200, Proto: "udp", RateScale: 1}
	for i := 1; i <= 2; i++ {
		res.RunList = append(res.RunList,
			fakeRun("static", i, gbr, mbr, staticA, 9.331, 9.331),
			fakeRun("aware", i, gbr, mbr, 17.589+0.001*float64(i), awareB, 4.541))
	}
	res.Arms = Summarise(res, seedArms(), 1)
	return res
}

func TestSeedAcceptancePassesOnSeedLikeNumbers(t *testing.T) {
	// Packet accounting: B at its 6 Mbit/s of IP packets is 6 × 1200/1228
	// of payload.
	res := seedResults(9.331, 5.863)
	checks := SeedAcceptance(res)
	if len(checks) != 9 {
		t.Fatalf("%d checks, want 9: %+v", len(checks), checks)
	}
	for _, c := range checks {
		if !c.OK {
			t.Errorf("%s: failed: %s", c.Name, c.Detail)
		}
	}
	aw := res.Arms[1]
	if got := aw.Ceiling; got < 27.993 || got > 27.995 {
		t.Errorf("payload ceiling %.4f, want 30×1200/1286 = 27.994", got)
	}
	if a := aw.Flows[0].Goodput; a.N != 2 || a.Half <= 0 || a.Lo > 17.590 || a.Hi < 17.591 {
		t.Errorf("aware A estimate %+v", a)
	}
}

func TestSeedAcceptanceCatchesViolations(t *testing.T) {
	res := seedResults(12, 5.599) // static unequal; aware B at the frame-accounting rate, 4.5% short of its MBR
	failed := map[string]bool{}
	for _, c := range SeedAcceptance(res) {
		if !c.OK {
			failed[c.Name] = true
		}
	}
	for _, want := range []string{"static: each flow within ±3% of an equal share", "aware: flow B within 1% of its MBR"} {
		if !failed[want] {
			t.Errorf("check %q did not fail (failed: %v)", want, failed)
		}
	}
}

func TestMeasureFromCountersAndSeries(t *testing.T) {
	arms := seedArms()
	pol, err := plan.PolicyOf(arms[1].Policy)
	if err != nil {
		t.Fatal(err)
	}
	tree, probs := plan.Plan(arms[1].Flows, pol, nil)
	if _, bad := shaper.FirstError(probs); bad {
		t.Fatal(probs)
	}
	rep := shaper.Report{}
	for _, c := range tree.Classes {
		rep.Classes = append(rep.Classes, shaper.ClassState{Handle: tree.Handle(c.Minor), Role: c.Role, Flow: c.Flow, Rate: c.Rate, Ceil: c.Ceil})
	}
	s1, s2 := map[string]shaper.Counters{}, map[string]shaper.Counters{}
	for i, c := range tree.FlowClasses() {
		h := tree.Handle(c.Minor)
		s1[h] = shaper.Counters{Bytes: 1000, Packets: 1}
		pk := uint64(1000 * (i + 1))
		s2[h] = shaper.Counters{Bytes: 1000 + pk*1286, Packets: 1 + pk, Drops: 7}
	}
	traffic := map[string]FlowTraffic{"A": {Mbps: []float64{0, 1, 16, 17, 99}, Lost: []int64{0, 0, 2, 3, 0}}}
	o := Options{WindowStart: 2 * time.Second, WindowEnd: 4 * time.Second, Tolerance: 0.05, Payload: 1200}
	var run RunResult
	measure(&run, &o, arms[1], rep, 1, s1, s2, 2*time.Second, traffic)
	a, b := run.Flows[0], run.Flows[1]
	if a.Goodput != 16.5 || a.Lost != 5 || !a.GBRPass || !a.MBRPass {
		t.Errorf("flow A: %+v", a)
	}
	if a.Frame != 1286 || run.Frame != 1286 || a.Drops != 7 {
		t.Errorf("frames: flow %.1f run %.1f drops %d", a.Frame, run.Frame, a.Drops)
	}
	// B has no receiver series: goodput from counters, 2000 pkts × 1200 B in 2 s.
	if want := 2000 * 1200 * 8 / 2.0 / 1e6; b.Goodput < want-1e-9 || b.Goodput > want+1e-9 {
		t.Errorf("flow B counter goodput %.4f, want %.4f", b.Goodput, want)
	}
}

// parseSVG checks that data is well-formed XML with an <svg> root in the
// SVG namespace, and counts elements by name.
func parseSVG(t *testing.T, data []byte) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	counts := map[string]int{}
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("invalid XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Space + " " + se.Name.Local
			}
			counts[se.Name.Local]++
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Fatalf("root element %q, want svg in the SVG namespace", root)
	}
	return counts
}

func TestFiguresAreValidSVG(t *testing.T) {
	res := seedResults(9.331, 5.599)
	res.Arms[0].Arm.Name = `static <"&'>` // must be escaped
	c1 := parseSVG(t, Figure1(res))
	if c1["rect"] < 1+6 { // background + 2 arms × 3 flows
		t.Errorf("figure 1: %d rects, want bars for 2 arms × 3 flows", c1["rect"])
	}
	c2 := parseSVG(t, Figure2(res))
	if c2["polyline"] != 6 || c2["polygon"] != 6 {
		t.Errorf("figure 2: %d lines, %d CI bands, want 6 each", c2["polyline"], c2["polygon"])
	}
	parseSVG(t, Figure1(&Results{}))
	parseSVG(t, Figure2(&Results{}))
}

func TestWriteFilesAndTable(t *testing.T) {
	res := seedResults(9.331, 5.599)
	dir := filepath.Join(t.TempDir(), "out")
	paths, err := WriteFiles(dir, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 5 {
		t.Fatalf("wrote %v", paths)
	}
	var back Results
	data, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if err := json.Unmarshal(data, &back); err != nil || len(back.RunList) != 4 || len(back.Arms) != 2 {
		t.Fatalf("results.json: %v (%d runs)", err, len(back.RunList))
	}
	f, _ := os.Open(filepath.Join(dir, "results.csv"))
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 1+4*3 {
		t.Fatalf("results.csv: %v, %d rows, want header + 12", err, len(rows))
	}
	var b strings.Builder
	if err := WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Flow A (GBR 15, MBR 18)", "Flow C (best effort)", "static (seed)", "16.716", "aware (gtpqos)", "27.994 Mbit/s", "±"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	good := Options{Arms: seedArms(), Runs: 1, Duration: 10 * time.Second, WindowStart: 2 * time.Second, WindowEnd: 8 * time.Second}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(o *Options){
		"no arms":        func(o *Options) { o.Arms = nil },
		"dup arm":        func(o *Options) { o.Arms[1].Name = "static" },
		"window":         func(o *Options) { o.WindowEnd = 11 * time.Second },
		"fraction":       func(o *Options) { o.WindowStart = 1500 * time.Millisecond },
		"runs":           func(o *Options) { o.Runs = 0 },
		"policer absent": func(o *Options) { o.Arms[0].Policer = "on" },
	} {
		o := good
		o.Arms = append([]Arm(nil), good.Arms...)
		mut(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// fakeSweep is a sweep of two payloads: packet accounting on the
// contracts, frame accounting short by 58/(IP + 58).
func fakeSweep() *SweepResults {
	r := &SweepResults{RateScale: 0.1, DurationS: 12, WindowS: [2]int{5, 11}, Tolerance: 0.01}
	for _, p := range []int{64, 1200} {
		for _, u := range []string{"packet", "frame"} {
			k := 1.0
			if u == "frame" {
				k = float64(p+28) / float64(p+86)
			}
			mbr := SweepRun{Scenario: "mbr", Payload: p, Unit: u, Flows: []FlowRun{
				{Name: "A", Class: "6771:10", IP: 1.5 * k, LossFrac: 1 - k/2, Lost: 100}, {Name: "B", Class: "6771:11", IP: 1.485 * k}}}
			gbr := SweepRun{Scenario: "gbr", Payload: p, Unit: u, Flows: []FlowRun{{Name: "A", IP: 0.6 * k}, {Name: "C", IP: 2}}}
			c := sweepCase{payload: p, scale: 0.1, tol: 0.01}
			for _, sr := range []*SweepRun{&mbr, &gbr} {
				by := map[string]FlowRun{}
				for _, f := range sr.Flows {
					by[f.Name] = f
				}
				for _, sc := range Scenarios {
					if sc.Name == sr.Scenario {
						sr.Checks = sc.check(c, by)
					}
				}
			}
			r.Runs = append(r.Runs, mbr, gbr)
		}
	}
	return r
}

func TestSweepTableFigureAndChecks(t *testing.T) {
	r := fakeSweep()
	if f, n := r.Failed("packet"); f != 0 || n != 8 {
		t.Errorf("packet: %d of %d checks failed, want 0 of 8", f, n)
	}
	if f, _ := r.Failed("frame"); f != 6 {
		// MBR rate, drop share and GBR fail at both sizes; B's class
		// drops nothing either way.
		t.Errorf("frame: %d checks failed, want 6", f)
	}
	var b strings.Builder
	if err := WriteSweepTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rate scale 0.1", "64 B     92 B", "15.000 (+0.00%)", "9.200 (-38.67%)", "50.00%", "accounting packet: 8 of 8 checks passed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	c := parseSVG(t, SweepFigure(r))
	if c["polyline"] != 5 || c["circle"] != 8 {
		t.Errorf("figure: %d lines, %d points; want 4 series + the expected frame error, 8 points", c["polyline"], c["circle"])
	}
	paths, err := WriteSweepFiles(t.TempDir(), r)
	if err != nil || len(paths) != 3 {
		t.Fatalf("files %v: %v", paths, err)
	}
}

func TestSeedAcceptanceJudgesTheArmsNamedAfterTheSeed(t *testing.T) {
	// An extra aware arm with flows A, B and C after the seed's (a GBR
	// case, say) has other contracts: the seed's criteria judge "aware".
	res := seedResults(9.331, 5.863)
	extra := seedResults(12, 5.599).Arms[1]
	extra.Arm.Name = "gbr"
	res.Arms = append(res.Arms, extra)
	for _, c := range SeedAcceptance(res) {
		if !c.OK {
			t.Errorf("%s: failed: %s", c.Name, c.Detail)
		}
	}
}
