package main

import (
	"strings"
	"testing"
	"time"
)

func TestABOptions(t *testing.T) {
	f := abFlags{lab: true, tolerance: 0.05, payload: 1200, traffic: "builtin", window: "3-9", duration: "10"}
	o, err := f.options([]string{"st=../../examples/seed-static.yaml", "../../examples/seed-aware.yaml"})
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
}

func TestABOptionsErrors(t *testing.T) {
	arm := "../../examples/seed-aware.yaml"
	for name, c := range map[string]struct {
		f    abFlags
		args []string
		want string
	}{
		"window":      {abFlags{lab: true, window: "10"}, []string{arm}, "--window"},
		"past end":    {abFlags{lab: true, window: "10-70"}, []string{arm}, "window"},
		"no arms":     {abFlags{lab: true}, nil, "no arms"},
		"no target":   {abFlags{tcp: true}, []string{arm}, "need --lab"},
		"lab policer": {abFlags{lab: true}, []string{arm + ",policer=on"}, "the lab has no gtp5g"},
		"bad option":  {abFlags{lab: true}, []string{arm + ",police=on"}, "policer=on or policer=off"},
		"missing":     {abFlags{lab: true}, []string{"nope.yaml"}, "nope.yaml"},
	} {
		c.f.traffic = "builtin"
		c.f.tolerance = 0.05
		_, err := c.f.options(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
}

func TestSweepOptions(t *testing.T) {
	f := abFlags{lab: true, traffic: "builtin", sweep: "payload=64,128,1400"}
	o, err := f.sweepOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Payloads) != 3 || o.Payloads[2] != 1400 || o.Tolerance != 0.01 || o.Duration != 12*time.Second || o.WindowStart != 5*time.Second || o.WindowEnd != 11*time.Second {
		t.Fatalf("sweep options %+v", o)
	}
	for name, c := range map[string]struct {
		f    abFlags
		args []string
		want string
	}{
		"not lab":   {abFlags{sweep: "payload=64"}, nil, "give --lab"},
		"with arms": {abFlags{lab: true, sweep: "payload=64"}, []string{"a.yaml"}, "no arms"},
		"tcp":       {abFlags{lab: true, tcp: true, sweep: "payload=64"}, nil, "--tcp"},
		"key":       {abFlags{lab: true, sweep: "size=64"}, nil, "want payload=N"},
		"too big":   {abFlags{lab: true, sweep: "payload=64,1500"}, nil, `payload "1500"`},
		"not a num": {abFlags{lab: true, sweep: "payload=64,x"}, nil, `payload "x"`},
		"window":    {abFlags{lab: true, sweep: "payload=64", window: "5-20"}, nil, "--window"},
	} {
		c.f.traffic = "builtin"
		if _, err := c.f.sweepOptions(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
}
