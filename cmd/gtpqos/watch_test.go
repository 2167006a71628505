package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/watch"
)

func TestWatchFailsFastWithoutGTP5G(t *testing.T) {
	if _, err := os.Stat("/sys/module/gtp5g"); err == nil {
		t.Skip("gtp5g is loaded here: this test needs a machine without it")
	}
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"watch", "--n3", "X", "--link-rate", "30mbit"}, &out, &errb) }()
	select {
	case code := <-done:
		if code != 1 {
			t.Fatalf("exit status %d, want 1 (stderr %q)", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gtpqos watch without gtp5g did not exit: it must fail fast, not wait")
	}
	if got := errb.String(); got != "gtp5g module not loaded\n" {
		t.Fatalf("stderr %q, want the one line %q", got, "gtp5g module not loaded")
	}
}

func TestWatchUsageErrors(t *testing.T) {
	cases := map[string][]string{
		"--n3 is required":              {"watch", "--link-rate", "30mbit"},
		"--link-rate is required":       {"watch", "--n3", "eth0"},
		"link rate":                     {"watch", "--n3", "eth0", "--link-rate", "fast"},
		"--mark-mode":                   {"watch", "--n3", "eth0", "--link-rate", "1mbit", "--mark-mode", "sometimes"},
		"flag provided but not defined": {"watch", "--n3", "eth0", "--bogus"},
	}
	for want, args := range cases {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line containing %q", args, code, errb.String(), want)
		}
	}
}

func TestWatchHelpListsFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"watch", "-h"}, &out, &errb); code != 0 {
		t.Fatalf("watch -h: exit %d, stderr %q", code, errb.String())
	}
	for _, f := range []string{"-n3", "-link-rate", "-cleanup-on-exit", "-metrics-addr", "-resync"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("watch -h does not list %s", f)
		}
	}
}

// Every flag lands on its config field and wins over the file; what no
// flag gives keeps the file's value.
func TestWatchFlagsOverConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "watch.yaml")
	if err := os.WriteFile(path, []byte("n3: eth1\nlink_rate: 10mbit\ncleanup_on_exit: true\nforce: true\nresync: 1m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, gotPath, _, err := watchFlags([]string{"--config", path, "--n6", "eth2", "--link-rate", "20mbit", "--n6-link-rate", "5mbit",
		"--poll", "3s", "--retry", "7s", "--mark-mode", "qfi", "--classifier", "fw", "--metrics-addr", "off",
		"--cleanup-on-exit=false", "--lock-dir", "/tmp/l", "--events-buffer", "1m", "--log-level", "debug"}, io.Discard)
	if err != nil || gotPath != path {
		t.Fatalf("watchFlags: path %q, err %v", gotPath, err)
	}
	want := watch.DefaultConfig()
	want.N3, want.N6, want.LinkRate, want.N6LinkRate = "eth1", "eth2", "20mbit", "5mbit"
	want.Poll, want.Retry, want.Resync = watch.Duration(3*time.Second), watch.Duration(7*time.Second), watch.Duration(time.Minute)
	want.MarkMode, want.Classifier, want.MetricsAddr, want.LockDir = "qfi", "fw", "off", "/tmp/l"
	want.CleanupOnExit, want.Force, want.EventsBuffer, want.LogLevel = false, true, "1m", "debug"
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("config\n%+v\nwant\n%+v", cfg, want)
	}
}
