package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
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
	want := shaper.DefaultPolicy(1e9)
	want.Leaf.Kind = shaper.LeafAuto
	if dl.LinkRate != 1e9 || ul.LinkRate != 1e9 || dl.NonGBRMin != want.NonGBRMin || dl.Burst != want.Burst ||
		dl.Quantum != want.Quantum || dl.Admission != shaper.Refuse || dl.Mode != shaper.Aware {
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
	if time.Duration(cfg.Resync) != DefaultResync || cfg.MarkMode != "flow" {
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
