package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

func TestExampleConfigLoads(t *testing.T) {
	cfg, err := LoadConfig("../packaging/gtpqos-watch.yaml")
	if err != nil {
		t.Fatalf("packaging example: %v", err)
	}
	if cfg.N3 != "eth1" || cfg.N6 != "eth2" || time.Duration(cfg.Poll) != 2*time.Second || cfg.MetricsAddr != "127.0.0.1:9477" {
		t.Fatalf("example decoded as %+v", cfg)
	}
	dl, ul, err := cfg.Policies()
	if err != nil {
		t.Fatalf("example policies: %v", err)
	}
	want := plan.DefaultPolicy(1e9)
	want.Leaf.Kind = plan.LeafAuto
	hdl := htbPolicy(t, dl)
	if dl.LinkRate != 1e9 || ul.LinkRate != 1e9 || dl.NonGBRMin != want.NonGBRMin || hdl.Burst != want.Burst ||
		hdl.Quantum != want.Quantum || dl.Admission != shaper.Refuse || dl.Mode != shaper.Aware {
		t.Fatalf("example policy %+v, want the seed defaults at 1gbit", dl)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"n3: a\nlinkrate: 1mbit\n":                               "linkrate",
		"n3: a\nlink_rate: fast\n":                               "link rate",
		"n3: a\nlink_rate: 1mbit\npoll: often\n":                 "often",
		"n3: a\nlink_rate: 1mbit\npolicy:\n  burst: x\n":         "burst",
		"n3: a\nlink_rate: 1mbit\npolicy:\n  admission: maybe\n": "admission",
		"n3: a\nlink_rate: 1mbit\npolicy:\n  prio: 05\n":         "prio: invalid value \"05\": zero-padded",
		"n3: a\nlink_rate: 1mbit\n---\nn3: b\n":                  "line 3: a second YAML document",
	}
	for text, want := range cases {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(p)
		if err == nil {
			_, _, err = cfg.Policies()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %q: err = %v, want one naming %q", text, err, want)
		}
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := LoadConfig("/dev/zero"); err == nil || !strings.Contains(err.Error(), "config /dev/zero: not a regular file") {
			t.Errorf("config /dev/zero: err = %v, want it refused as not a regular file", err)
		}
	}
	if _, _, err := DefaultConfig().Policies(); err == nil || !strings.Contains(err.Error(), "link rate") {
		t.Errorf("no link rate: err = %v", err)
	}
}

func TestConfigOverridesDefaults(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	text := "n3: a\nlink_rate: 30mbit\nn6_link_rate: 10mbit\npolicy:\n  non_gbr_min: 2mbit\n  mode: static\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	dl, ul, err := cfg.Policies()
	if err != nil {
		t.Fatal(err)
	}
	if dl.LinkRate != 30e6 || ul.LinkRate != 10e6 || dl.NonGBRMin != 2e6 || dl.DefaultRate != 2e6 || dl.Mode != shaper.Static {
		t.Fatalf("policies dl %+v ul %+v", dl, ul)
	}
	if time.Duration(cfg.Resync) != DefaultResync || cfg.MarkMode != "current" {
		t.Fatalf("defaults lost: %+v", cfg)
	}
}

// FuzzConfig feeds arbitrary files to the config loader: errors are fine,
// panics are not.
func FuzzConfig(f *testing.F) {
	if b, err := os.ReadFile("../packaging/gtpqos-watch.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("n3: a\nlink_rate: 30mbit\npoll: 1s\npolicy:\n  burst: 32k\n"))
	f.Add([]byte("link_rate: [1, 2]\nresync: -1s\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(p)
		if err != nil {
			return
		}
		_, _, _ = cfg.Policies()
	})
}

// TestConfigUnknownKeysOneLine checks that unknown keys give one line that
// names the file, the line and the first key.
func TestConfigUnknownKeysOneLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("n3: a\nlinkrate: 1mbit\npolicy:\n  burts: 1k\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(p)
	want := "config " + p + `: line 2: unknown key "linkrate" at top level (and 1 more)`
	if err == nil || err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

// TestConfigLegacyKeysMapToFlowsFilePolicy: a watch config written for the
// old schema (numeric quantum and max_frame, classifier at top level)
// still loads, and gives the same Policy as a flows file's policy section
// (the one schema both share) with the same knobs.
func TestConfigLegacyKeysMapToFlowsFilePolicy(t *testing.T) {
	cases := []struct{ config, flows string }{
		{
			config: "n3: a\nlink_rate: 30mbit\nclassifier: bpf\npolicy:\n  quantum: 12500\n  max_frame: 1514\n",
			flows:  "link: 30mbit\npolicy:\n  quantum: 12500\n  max_frame: 1514\n  classifier: bpf\n",
		},
		{
			config: "n3: a\nlink_rate: 30mbit\nclassifier: fw\npolicy:\n  quantum: 20000\n  max_frame: 9000\n  burst: 64k\n  admission: clamp\n",
			flows:  "link: 30mbit\npolicy:\n  quantum: \"20000\"\n  max_frame: \"9000\"\n  burst: 64k\n  admission: clamp\n  classifier: fw\n",
		},
		{
			// policy.classifier in the config, top-level classifier left
			// at its default (auto): the policy's wins.
			config: "n3: a\nlink_rate: 30mbit\npolicy:\n  classifier: bpf\n",
			flows:  "link: 30mbit\npolicy:\n  classifier: bpf\n",
		},
		{
			// A top-level kind other than auto wins over policy.classifier.
			config: "n3: a\nlink_rate: 30mbit\nclassifier: fw\npolicy:\n  classifier: bpf\n",
			flows:  "link: 30mbit\npolicy:\n  classifier: fw\n",
		},
	}
	for _, c := range cases {
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, []byte(c.config), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(p)
		if err != nil {
			t.Errorf("config %q: %v", c.config, err)
			continue
		}
		dl, ul, err := cfg.Policies()
		if err != nil {
			t.Errorf("config %q: policies: %v", c.config, err)
			continue
		}
		ff, err := shaper.ParseFlowsFile("flows.yaml", []byte(c.flows))
		if err != nil {
			t.Fatalf("flows file %q: %v", c.flows, err)
		}
		if dl != ff.Policy || ul != ff.Policy {
			t.Errorf("config %q:\n dl %+v\n ul %+v\nwant the flows file's %+v", c.config, dl, ul, ff.Policy)
		}
	}
	// And the legacy values themselves.
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(cases[1].config), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	sdl, _, err := cfg.Policies()
	if err != nil {
		t.Fatal(err)
	}
	dl := htbPolicy(t, sdl)
	if dl.Quantum != 20000 || dl.MaxFrame != 9000 || dl.Burst != 64*1024 || dl.Admission != shaper.Clamp || dl.Classifier != classify.KindFw {
		t.Fatalf("legacy config gave %+v", dl)
	}
}

// TestDaemonReloadSetsPoliciesOnNextApply is SIGHUP in `gtpqos watch`: a
// re-read config's rates and policy reach the next Apply of each device
// (through a full resync), the classification mode stays the daemon's,
// device changes are noted as needing a restart, and a config that does
// not load leaves the running policies in place.
func TestDaemonReloadSetsPoliciesOnNextApply(t *testing.T) {
	cfg := DefaultConfig()
	cfg.N3, cfg.N6, cfg.LinkRate = "n3", "n6", "30mbit"
	dlPol, ulPol, err := cfg.Policies()
	if err != nil {
		t.Fatal(err)
	}
	// As on stock gtp5g: the daemon classifies by GTP-U header.
	for _, p := range []*shaper.Policy{&dlPol, &ulPol} {
		if *p, err = backends.Override(*p, shaper.Knobs{"classifier": "gtpu"}); err != nil {
			t.Fatal(err)
		}
	}
	src := newScriptedSource()
	up := flow(2, 1, 9, 0, 2e6)
	up.Direction = shaper.Uplink
	src.set(1, flow(1, 1, 2, 0, 5e6))
	src.set(2, up)
	dl, ul := &fakeBackend{dev: "n3"}, &fakeBackend{dev: "n6"}
	eng := startEngine(t, Options{Source: src, Downlink: dl, DownlinkPolicy: dlPol, Uplink: ul, UplinkPolicy: ulPol, Resync: time.Hour})
	d := &Daemon{cfg: cfg, eng: eng}
	eventually(t, 5*time.Second, "start", func() bool { _, n := dl.state(); _, m := ul.state(); return n >= 1 && m >= 1 })
	if got := dl.policy(); got.LinkRate != 30e6 {
		t.Fatalf("before reload: link %d", got.LinkRate)
	}

	cfg2 := cfg
	cfg2.LinkRate, cfg2.N6LinkRate = "50mbit", "20mbit"
	cfg2.Policy.NonGBRMin = "2mbit"
	cfg2.Classifier = "bpf" // the file cannot change the classification mode
	note, err := d.Reload(cfg2)
	if err != nil || note != "" {
		t.Fatalf("reload: note %q, err %v", note, err)
	}
	eventually(t, 5*time.Second, "the reloaded policies applied", func() bool {
		return dl.policy().LinkRate == 50e6 && ul.policy().LinkRate == 20e6
	})
	if got := dl.policy(); got.NonGBRMin != 2e6 || got.DefaultRate != 2e6 || htbPolicy(t, got).Classifier != classify.KindGTPU {
		t.Fatalf("after reload: downlink policy %+v; want non_gbr_min 2mbit and classifier gtpu kept", got)
	}
	if got := htbPolicy(t, ul.policy()); got.Classifier != classify.KindGTPU {
		t.Fatalf("after reload: uplink classifier %s, want gtpu kept", got.Classifier)
	}
	if resyncs, _ := dl.counts(); resyncs != 2 {
		t.Errorf("Backend.Resync called %d times, want 2 (start, reload)", resyncs)
	}

	// A config that does not give policies is refused; the running ones
	// stay.
	bad := cfg2
	bad.LinkRate = "lots"
	if _, err := d.Reload(bad); err == nil {
		t.Fatal("reload of a config with a bad link rate succeeded")
	}
	if got, _ := eng.Policy(shaper.Downlink); got.LinkRate != 50e6 {
		t.Fatalf("after a bad reload: link %d, want 50mbit kept", got.LinkRate)
	}

	// Devices need a restart: said, rates applied anyway.
	moved := cfg2
	moved.N3, moved.LinkRate = "n3b", "40mbit"
	if note, err := d.Reload(moved); err != nil || !strings.Contains(note, "restart") {
		t.Fatalf("reload with another device: note %q, err %v; want a note that it needs a restart", note, err)
	}
	eventually(t, 5*time.Second, "rates applied after a device change", func() bool { return dl.policy().LinkRate == 40e6 })
}

func TestConfigEventsBuffer(t *testing.T) {
	for in, want := range map[string]int{"": 0, "16k": 16 << 10, "8m": 8 << 20, "4096": 4096} {
		got, err := Config{EventsBuffer: in}.eventsBuffer()
		if err != nil || got != want {
			t.Errorf("events buffer %q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"1k", "lots", "-1m", "0"} {
		if _, err := (Config{EventsBuffer: in}).eventsBuffer(); err == nil || !strings.Contains(err.Error(), "events buffer") {
			t.Errorf("events buffer %q: err = %v, want one naming the events buffer", in, err)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	good := DefaultConfig()
	good.N3, good.LinkRate = "eth1", "30mbit"
	if err := good.Check(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	keep := good
	keep.MarkMode = "keep"
	if err := keep.Check(); err != nil {
		t.Fatalf("mark mode keep: %v", err)
	}
	for want, change := range map[string]func(*Config){
		"--n3 is required":        func(c *Config) { c.N3 = "" },
		"--link-rate is required": func(c *Config) { c.LinkRate = "" },
		"link rate":               func(c *Config) { c.LinkRate = "fast" },
		"n6 link rate":            func(c *Config) { c.N6LinkRate = "slow" },
		"--mark-mode":             func(c *Config) { c.MarkMode = "sometimes" },
		"policy":                  func(c *Config) { c.Policy.Mode = "clever" },
	} {
		c := good
		change(&c)
		if err := c.Check(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v", want, err)
		}
	}
}

// An interval so short the daemon would do nothing but read the devices is
// refused, naming the key.
func TestConfigRefusesTinyIntervals(t *testing.T) {
	for _, key := range []string{"poll", "resync", "retry"} {
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, []byte("n3: a\nlink_rate: 1mbit\n"+key+": 1ns\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(p)
		if err == nil {
			err = cfg.Check()
		}
		if err == nil || !strings.Contains(err.Error(), "--"+key+" 1ns: below 100ms") {
			t.Errorf("%s: 1ns: err = %v, want it refused naming %s", key, err, key)
		}
	}
}

// htbPolicy is pol with its HTB knobs decoded.
func htbPolicy(t testing.TB, pol shaper.Policy) plan.Policy {
	t.Helper()
	hp, err := plan.PolicyOf(pol)
	if err != nil {
		t.Fatal(err)
	}
	return hp
}
