package ab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/lab"
)

func TestSpecOptions(t *testing.T) {
	s := Spec{Lab: true, Tolerance: 0.05, Payload: 1200, Traffic: lab.TrafficBuiltin, Window: "3-9", Duration: "10"}
	o, err := s.Options([]string{"st=../../examples/seed-static.yaml", "../../examples/seed-aware.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Arms) != 2 || o.Arms[0].Name != "st" || o.Arms[1].Name != "seed-aware" {
		t.Fatalf("arms %+v", o.Arms)
	}
	if o.Arms[0].Policy.Mode.String() != "static" || len(o.Arms[1].Flows) != 3 {
		t.Fatalf("arm contents: %v, %d flows", o.Arms[0].Policy.Mode, len(o.Arms[1].Flows))
	}
	if o.Duration != 10*time.Second || o.WindowStart != 3*time.Second || o.WindowEnd != 9*time.Second || o.Runs != 3 {
		t.Fatalf("protocol %+v", o)
	}
	if o.Generator != lab.TrafficBuiltin || o.Payload != 1200 {
		t.Fatalf("traffic: generator %q, payload %d", o.Generator, o.Payload)
	}
}

func TestSpecOptionsDemoAndTCP(t *testing.T) {
	t.Chdir("../..") // the demo's arms are relative to the repository root
	s := Spec{Lab: true, Demo: true, TCP: true, Payload: 1200, Traffic: lab.TrafficBuiltin}
	o, err := s.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Arms) != 2 || o.Arms[0].Name != "static" || o.Arms[1].Name != "aware" {
		t.Fatalf("demo arms %+v", o.Arms)
	}
	if o.Runs != 2 || o.Duration != 20*time.Second || o.WindowStart != 5*time.Second || o.WindowEnd != 15*time.Second || o.Payload != 0 || !o.TCP {
		t.Fatalf("demo protocol with TCP: %+v", o)
	}
	s.Runs, s.Window = 4, "2-8"
	if o, err = s.Options([]string{"examples/seed-aware.yaml"}); err != nil || len(o.Arms) != 1 || o.Runs != 4 || o.WindowStart != 2*time.Second {
		t.Fatalf("demo with an arm, --runs and --window: %+v, %v", o, err)
	}
}

func TestSpecOptionsErrors(t *testing.T) {
	arm := "../../examples/seed-aware.yaml"
	for name, c := range map[string]struct {
		s     Spec
		args  []string
		want  string
		usage bool
	}{
		"window":      {Spec{Lab: true, Window: "10"}, []string{arm}, "--window", true},
		"duration":    {Spec{Lab: true, Duration: "long"}, []string{arm}, "--duration", true},
		"past end":    {Spec{Lab: true, Window: "10-70"}, []string{arm}, "window", true},
		"no arms":     {Spec{Lab: true}, nil, "no arms", true},
		"no target":   {Spec{TCP: true}, []string{arm}, "need --lab", true},
		"lab policer": {Spec{Lab: true}, []string{arm + ",policer=on"}, "the lab has no gtp5g", true},
		"bad option":  {Spec{Lab: true}, []string{arm + ",police=on"}, "policer=on or policer=off", true},
		"twice":       {Spec{Lab: true}, []string{arm, arm}, "given twice", true},
		"missing":     {Spec{Lab: true}, []string{"nope.yaml"}, "nope.yaml", false},
	} {
		c.s.Traffic = lab.TrafficBuiltin
		c.s.Tolerance = 0.05
		_, err := c.s.Options(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
			continue
		}
		var ue *UsageError
		if errors.As(err, &ue) != c.usage {
			t.Errorf("%s: err %v: usage error %v, want %v", name, err, !c.usage, c.usage)
		}
	}
}

func TestSpecSweepOptions(t *testing.T) {
	s := Spec{Lab: true, Traffic: lab.TrafficBuiltin, Sweep: "payload=64,128,1400"}
	o, err := s.SweepOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Payloads) != 3 || o.Payloads[2] != 1400 || o.Tolerance != 0.01 || o.Duration != 12*time.Second || o.WindowStart != 5*time.Second || o.WindowEnd != 11*time.Second {
		t.Fatalf("sweep options %+v", o)
	}
	for name, c := range map[string]struct {
		s    Spec
		args []string
		want string
	}{
		"not lab":   {Spec{Sweep: "payload=64"}, nil, "give --lab"},
		"with arms": {Spec{Lab: true, Sweep: "payload=64"}, []string{"a.yaml"}, "no arms"},
		"tcp":       {Spec{Lab: true, TCP: true, Sweep: "payload=64"}, nil, "--tcp"},
		"key":       {Spec{Lab: true, Sweep: "size=64"}, nil, "want payload=N"},
		"too big":   {Spec{Lab: true, Sweep: "payload=64,1500"}, nil, `payload "1500"`},
		"too small": {Spec{Lab: true, Sweep: "payload=19"}, nil, `payload "19"`},
		"not a num": {Spec{Lab: true, Sweep: "payload=64,x"}, nil, `payload "x"`},
		"window":    {Spec{Lab: true, Sweep: "payload=64", Window: "5-20"}, nil, "--window"},
	} {
		c.s.Traffic = lab.TrafficBuiltin
		_, err := c.s.SweepOptions(c.args)
		var ue *UsageError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ue) {
			t.Errorf("%s: err = %v, want a usage error with %q", name, err, c.want)
		}
	}
}

func TestParseProtocol(t *testing.T) {
	for _, c := range []struct {
		dur, win string
		d, from  time.Duration
		to       time.Duration
	}{
		{"60", "10-50", time.Minute, 10 * time.Second, 50 * time.Second},
		{"1m30s", "0-90", 90 * time.Second, 0, 90 * time.Second},
	} {
		d, from, to, err := ParseProtocol(c.dur, c.win)
		if err != nil || d != c.d || from != c.from || to != c.to {
			t.Errorf("ParseProtocol(%q, %q) = %v, %v, %v, %v", c.dur, c.win, d, from, to, err)
		}
	}
	for _, win := range []string{"10", "a-5", "5-b", "1.5-3"} {
		if _, _, _, err := ParseProtocol("60", win); err == nil || !strings.Contains(err.Error(), "--window") {
			t.Errorf("window %q: err = %v", win, err)
		}
	}
}

func TestParseArm(t *testing.T) {
	a, err := ParseArm("../../examples/seed-aware.yaml,policer=off")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "seed-aware" || a.Policer != "off" || a.Source != "../../examples/seed-aware.yaml" || len(a.Flows) != 3 || a.Policy.Mode.String() != "aware" {
		t.Fatalf("arm %+v", a)
	}
	a, err = ParseArm("x=../../examples/seed-static.yaml")
	if err != nil || a.Name != "x" || a.Policer != "" {
		t.Fatalf("named arm: %+v, %v", a, err)
	}
}

// OpenTarget refuses what it can tell is wrong before it builds anything
// (no lab comes up, no device is opened for these).
func TestOpenTargetRefusesBadSpec(t *testing.T) {
	for name, c := range map[string]struct {
		s    Spec
		want string
	}{
		"classifier": {Spec{Lab: true, Classifier: "nope"}, "--classifier"},
		"leaf":       {Spec{Dev: "lo", Leaf: "nope"}, "--leaf"},
		"no target":  {Spec{}, "give --lab, or --dev"},
	} {
		var o Options
		tg, closeAll, err := OpenTarget(context.Background(), c.s, &o, Hooks{})
		var ue *UsageError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ue) || tg != nil || closeAll != nil {
			t.Errorf("%s: target %v, err %v; want a usage error with %q and nothing to close", name, tg, err, c.want)
		}
	}
}

// A device that does not exist is the device's error, not a usage error,
// and whatever OpenTarget set up first (the policer switch) is undone.
func TestOpenTargetMissingDevice(t *testing.T) {
	var o Options
	var failed []string
	h := Hooks{Failed: func(step string, err error) { failed = append(failed, step+": "+err.Error()) }}
	_, _, err := OpenTarget(context.Background(), Spec{Dev: "gtpqos-none0"}, &o, h)
	var ue *UsageError
	if err == nil || !strings.Contains(err.Error(), "gtpqos-none0") || errors.As(err, &ue) {
		t.Fatalf("err = %v, want the device's error naming gtpqos-none0", err)
	}
	if len(failed) != 0 {
		t.Fatalf("clean-up steps failed: %v", failed)
	}
}
