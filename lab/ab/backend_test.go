package ab

import (
	"bytes"
	"encoding/csv"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

// --backend takes one known backend or a list of distinct ones; anything
// else is one line naming the flag.
func TestParseBackends(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"edt", []string{"edt"}, ""},
		{"htb, edt", []string{"htb", "edt"}, ""},
		{"htb,nope", nil, `--backend "htb,nope": unknown backend "nope" (known: edt, htb)`},
		{"htb,", nil, `--backend "htb,": unknown backend ""`},
		{"edt,edt", nil, `--backend "edt,edt": backend edt given twice`},
	} {
		got, err := ParseBackends(c.in)
		if c.err != "" {
			var ue *UsageError
			if err == nil || !strings.HasPrefix(err.Error(), c.err) || strings.Contains(err.Error(), "\n") || !errorsAs(err, &ue) {
				t.Errorf("%q: %v, want a usage error starting %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// One backend keeps the arms' names; two make every arm one arm per
// backend, in the order given, each policy naming its backend.
func TestWithBackends(t *testing.T) {
	one := WithBackends(seedArms(), []string{"edt"})
	if len(one) != 2 || one[0].Name != "static" || one[1].Policy.Backend != "edt" || one[1].Backend != "edt" {
		t.Errorf("one backend: %+v", one)
	}
	two := WithBackends(seedArms(), []string{"htb", "edt"})
	var names []string
	for _, a := range two {
		names = append(names, a.Name+"="+a.Policy.Backend)
	}
	if want := []string{"static/htb=htb", "static/edt=edt", "aware/htb=htb", "aware/edt=edt"}; !slices.Equal(names, want) {
		t.Errorf("two backends: %v, want %v", names, want)
	}
	if len(WithBackends(seedArms(), nil)) != 2 || seedArms()[0].Policy.Backend != "" {
		t.Error("no backend: want the arms unchanged")
	}
}

// sideBySide is the seed's results under htb and edt: edt's aware arm
// misses B's MBR.
func sideBySide() *Results {
	gbr, mbr := []float64{15, 5, 0}, []float64{18, 6, 30}
	arms := WithBackends(seedArms(), []string{"htb", "edt"})
	res := &Results{Runs: 1, DurationS: 20, WindowFrom: 5, WindowTo: 15, Tolerance: 0.05, Payload: 1200, Proto: "udp", RateScale: 1}
	for _, a := range arms {
		b, c := 5.863, 4.541
		if a.Name == "aware/edt" {
			b, c = 5.2, 5.204
		}
		r := fakeRun(a.Name, 1, gbr, mbr, 9.331, 9.331, 9.331)
		if a.Policy.Mode.String() == "aware" {
			r = fakeRun(a.Name, 1, gbr, mbr, 17.589, b, c)
		}
		r.Backend = a.Backend
		res.RunList = append(res.RunList, r)
	}
	res.Arms = Summarise(res, arms, 1)
	return res
}

// The table, results.csv and the acceptance checks carry each arm's
// backend, and each backend is judged on its own arms.
func TestSideBySideOutput(t *testing.T) {
	res := sideBySide()
	var b bytes.Buffer
	if err := WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "config backend Flow A") {
		t.Errorf("table head %q, want config, backend, flows", lines[1])
	}
	squeezed := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{"aware/htb (gtpqos) htb 17.589", "aware/edt (gtpqos) edt 17.589 5.200", "static/edt (gtpqos) edt 9.331"} {
		if !strings.Contains(squeezed, want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	rows, err := csv.NewReader(bytes.NewReader(resultsCSV(res))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	last := len(rows[0]) - 1
	if rows[0][last] != "backend" || len(rows) != 13 {
		t.Fatalf("results.csv: head %v, %d rows; want a backend column and 12 rows", rows[0], len(rows))
	}
	for _, r := range rows[1:] {
		if !strings.HasSuffix(r[0], "/"+r[last]) {
			t.Errorf("results.csv row %v: backend %q is not the arm's", r, r[last])
		}
	}
	failed := map[string]bool{}
	n := map[string]int{}
	for _, c := range SeedAcceptance(res) {
		be, _, _ := strings.Cut(c.Name, ": ")
		n[be]++
		if !c.OK {
			failed[c.Name] = true
		}
	}
	if n["htb"] != 9 || n["edt"] != 9 || len(n) != 2 {
		t.Errorf("checks per backend %v, want the seed's 9 each", n)
	}
	if !failed["edt: aware: flow B within 1% of its MBR"] || len(failed) != 1 {
		t.Errorf("failed checks %v, want edt's B MBR alone", failed)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// A sweep under two backends parses --backend, lists every unit once per
// backend, and counts a unit's checks over both.
func TestSweepSideBySide(t *testing.T) {
	o, err := Spec{Lab: true, Traffic: "builtin", Sweep: "payload=64,1400", Backends: "htb,edt"}.SweepOptions(nil)
	if err != nil || !slices.Equal(o.Backends, []string{"htb", "edt"}) {
		t.Fatalf("sweep options: %+v, %v", o, err)
	}
	if _, err := (Spec{Lab: true, Traffic: "builtin", Sweep: "payload=64", Backends: "fq"}).SweepOptions(nil); err == nil || !strings.HasPrefix(err.Error(), `--backend "fq"`) {
		t.Errorf("bad backend in a sweep: %v", err)
	}
	r := &SweepResults{RateScale: 1, Tolerance: 0.01}
	for _, be := range []string{"htb", "edt"} {
		r.Runs = append(r.Runs, SweepRun{Scenario: "gbr", Payload: 64, Unit: "packet/" + be, Backend: be,
			Flows: []FlowRun{{Name: "A", IP: 6}}, Checks: []Check{{Name: "A", OK: be == "htb"}}})
	}
	if f, n := r.Failed("packet"); f != 1 || n != 2 {
		t.Errorf("Failed(packet) = %d of %d, want 1 of 2", f, n)
	}
	var b bytes.Buffer
	if err := WriteSweepTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"packet/htb", "packet/edt", "accounting packet/edt: 0 of 1 checks passed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("sweep table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestFlowCountersReadOnlyWhereFlowsShareClasses(t *testing.T) {
	perFlow := []shaper.ClassState{{Handle: "6771:1", Role: shaper.RoleLink}, {Handle: "6771:12", Role: shaper.RoleFlow}}
	dump := map[string]shaper.Counters{"6771:1": {}, "6771:12": {}}
	if flowsOutsideClasses(perFlow, dump) {
		t.Error("a flow with a tc class of its own: the flow counters would be read again")
	}
	shared := append(perFlow, shaper.ClassState{Handle: "edt/0x5", Role: shaper.RoleFlow})
	if !flowsOutsideClasses(shared, dump) {
		t.Error("a flow without a tc class of its own: its counters would not be read")
	}
}
