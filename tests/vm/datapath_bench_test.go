package vm

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchLineRE matches one result line of BenchmarkDatapathBackends;
// benchRatioRE its share of the reference device's packet rate and what
// that device is (unshaped, or htb-3 for a head-to-head case).
var (
	benchLineRE  = regexp.MustCompile(`^BenchmarkDatapathBackends/(\S+)/pps-\d+\s+\d+\s+\d+ ns/op.*?\s([\d.]+) pps`)
	benchRatioRE = regexp.MustCompile(`\s([\d.]+) of-(\S+)`)
)

// BenchmarkVMDatapathBackends runs shaper/backends' BenchmarkDatapathBackends
// in the guest, whose Debian kernel has sch_fq: packets per second one core
// pushes out of a veth with no qdisc, through the htb backend's class per
// flow and through the edt backend's shared classes, at 3 and 10,000 flows
// (and GTPQOS_BENCH_MAX, up to 1,000,000 for edt), all in one guest run.
// Under TCG the guest's core is emulated: compare the cases by their share
// of the unshaped veth's rate measured beside each (NAME-of-unshaped), not
// with the host's numbers.
//
//	GTPQOS_VM=1 go test -run '^$' -bench VMDatapathBackends -benchtime 1x ./tests/vm/
//	GTPQOS_VM=1 GTPQOS_BENCH_MAX=1000000 go test -run '^$' -bench VMDatapathBackends -benchtime 1x -timeout 60m ./tests/vm/
//
// GTPQOS_BENCH_CASES, a regular expression, runs only the cases whose
// names it matches (the guest's -test.bench DatapathBackends/CASES), e.g.
// 'vs-htb-3$' for the head-to-head cases alone.
func BenchmarkVMDatapathBackends(b *testing.B) {
	bench, cases := "DatapathBackends", os.Getenv("GTPQOS_BENCH_CASES")
	if cases != "" {
		if _, err := regexp.Compile(cases); err != nil {
			b.Fatalf("GTPQOS_BENCH_CASES=%q: %v", cases, err)
		}
		bench += "/" + cases
	}
	for range b.N {
		pps, ratio, of := map[string]float64{}, map[string]float64{}, map[string]string{}
		for _, l := range runGuestBench(b, "./shaper/backends/", bench) {
			m := benchLineRE.FindStringSubmatch(l)
			r := benchRatioRE.FindStringSubmatch(l)
			if m == nil || r == nil {
				continue
			}
			pps[m[1]], _ = strconv.ParseFloat(m[2], 64)
			ratio[m[1]], _ = strconv.ParseFloat(r[1], 64)
			of[m[1]] = r[2]
			b.Log(l)
		}
		switch {
		case cases == "" && (pps["none"] == 0 || pps["htb-3"] == 0 || pps["edt-3"] == 0):
			b.Fatalf("the guest reported no pps for none, htb-3 or edt-3: %v", pps)
		case len(pps) == 0:
			b.Fatalf("the guest reported no case matching GTPQOS_BENCH_CASES=%q", cases)
		}
		for name := range pps {
			b.ReportMetric(pps[name], name+"-pps")
			b.ReportMetric(ratio[name], name+"-of-"+of[name])
		}
	}
}

// BenchmarkVMEventToClassEdt runs gtpnl's BenchmarkEventToClass for the
// edt backend in the guest (sch_fq): `gtpqos watch`'s path from a gtp5g
// event to the session's map entries, at 1,000 and 10,000 sessions (and a
// million with GTPQOS_BENCH_MAX=1000000), with its build from empty, heap
// and resident set; the lines are the guest benchmark's own.
//
//	GTPQOS_VM=1 go test -run '^$' -bench VMEventToClassEdt -benchtime 1x -v ./tests/vm/
func BenchmarkVMEventToClassEdt(b *testing.B) {
	for range b.N {
		n := 0
		for _, l := range runGuestBench(b, "./gtpnl/", "EventToClass/edt") {
			if strings.HasPrefix(l, "BenchmarkEventToClass/edt") {
				b.Log(l)
				n++
			}
		}
		if n == 0 {
			b.Fatal("the guest reported no edt case")
		}
	}
}

// runGuestBench boots the guest with sch_fq and runs pkg's benchmarks
// matching bench there once (-test.benchtime 1x), with GTPQOS_BENCH_MAX
// passed on (and the guest's memory raised for it), and returns the
// guest's output lines with the harness's prefix taken off.
func runGuestBench(b *testing.B, pkg, bench string) []string {
	b.Helper()
	Require(b)
	bin := BuildTestBinary(b, pkg)
	env, mem := map[string]string{}, 2048
	if v := os.Getenv("GTPQOS_BENCH_MAX"); v != "" {
		env["GTPQOS_BENCH_MAX"] = v
		mem = 6144 // a million flows' maps, plan and read-back
	}
	name := "bin/" + strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_") + ".test"
	script := "set -e\n" + bin.Script(name, "-test.run", "^$", "-test.bench", bench, "-test.benchtime", "1x", "-test.v", "-test.timeout", "50m")
	res := Run(b, Config{Script: script, Files: map[string]string{name: bin.HostPath},
		Modules: []string{"sch_fq"}, Env: env, MemoryMiB: mem, Timeout: 55 * time.Minute})
	if res.ExitCode != 0 {
		b.Fatalf("%s -test.bench %s in the VM exited %d", pkg, bench, res.ExitCode)
	}
	var out []string
	for _, l := range strings.Split(res.Output, "\n") {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}
