package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOverrideOverFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "watch.yaml")
	file := "n3: eth1\nn6: eth2\nlink_rate: 10mbit\ncleanup_on_exit: true\npoll: 5s\nlock_dir: /tmp/locks\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Override{
		Config: Config{N3: "not-set", LinkRate: "50mbit", CleanupOnExit: false, Poll: Duration(time.Second), Force: true},
		Set:    map[string]bool{"link_rate": true, "cleanup_on_exit": true, "poll": true, "force": true, "n3": false},
	}
	cfg, err := Load(path, o)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.N3 != "eth1" || cfg.N6 != "eth2" || cfg.LockDir != "/tmp/locks" {
		t.Errorf("fields the override does not name: n3 %q n6 %q lock dir %q, want the file's", cfg.N3, cfg.N6, cfg.LockDir)
	}
	if cfg.LinkRate != "50mbit" || cfg.CleanupOnExit || time.Duration(cfg.Poll) != time.Second || !cfg.Force {
		t.Errorf("overridden fields: link %q cleanup %v poll %v force %v, want the override's", cfg.LinkRate, cfg.CleanupOnExit, time.Duration(cfg.Poll), cfg.Force)
	}
	if d := DefaultConfig(); cfg.MarkMode != d.MarkMode || cfg.Resync != d.Resync {
		t.Errorf("fields neither sets: mark mode %q resync %v, want the defaults", cfg.MarkMode, time.Duration(cfg.Resync))
	}
}

func TestOverrideWithoutFile(t *testing.T) {
	cfg, err := Load("", Override{Config: Config{N3: "eth9", Resync: Duration(time.Minute)}, Set: map[string]bool{"n3": true}})
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.N3 = "eth9"
	if cfg.N3 != "eth9" || cfg.Resync != want.Resync || cfg.MetricsAddr != want.MetricsAddr {
		t.Fatalf("config %+v, want the defaults with n3 eth9", cfg)
	}
}

func TestOverrideUnknownKey(t *testing.T) {
	cfg := DefaultConfig()
	err := Override{Config: Config{N3: "eth1"}, Set: map[string]bool{"n3": true, "link-rate": true, "bogus": true}}.Apply(&cfg)
	if err == nil || !strings.Contains(err.Error(), "bogus, link-rate") {
		t.Fatalf("err = %v, want both unknown keys named", err)
	}
	if cfg.N3 != "" {
		t.Fatalf("n3 %q: a refused override changed the config", cfg.N3)
	}
}

func TestOverrideFileError(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "none.yaml"), Override{}); err == nil || !strings.Contains(err.Error(), "none.yaml") {
		t.Fatalf("err = %v, want the missing file named", err)
	}
}
