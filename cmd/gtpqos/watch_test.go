package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
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
