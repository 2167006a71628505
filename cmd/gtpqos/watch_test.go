package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb"
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

func TestWatchMetricsLoopbackOnly(t *testing.T) {
	m := watch.NewMetrics()
	for _, addr := range []string{"0.0.0.0:9477", "192.0.2.1:9477", ":9477"} {
		if srv, err := serveMetrics(addr, m); err == nil {
			srv.Close()
			t.Errorf("--metrics-addr %s accepted: metrics must stay on loopback", addr)
		}
	}
	srv, err := serveMetrics("127.0.0.1:0", m)
	if err != nil {
		t.Fatalf("loopback: %v", err)
	}
	srv.Close()
}

// recordingReconciler captures the trees it is asked to reconcile.
type recordingReconciler struct{ last *htb.Tree }

func (r *recordingReconciler) Dev() string { return "n3test" }
func (r *recordingReconciler) Reconcile(ctx context.Context, t *htb.Tree) (htb.Result, error) {
	r.last = t
	return htb.Result{}, nil
}
func (r *recordingReconciler) Actual(context.Context) (*htb.Tree, error) { return nil, nil }
func (r *recordingReconciler) Reset(context.Context) error               { return nil }
func (r *recordingReconciler) ClassStats(context.Context) (map[uint32]htb.ClassStats, error) {
	return nil, nil
}

func TestWatchSIGHUPReloadAppliesNewRates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "watch.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("n3: n3test\nlink_rate: 30mbit\n")
	cfg, _, override, err := watchFlags([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	dlPol, _, err := cfg.Policies()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingReconciler{}
	dl := watch.NewShaperApplier(rec, dlPol)
	eng, err := watch.New(watch.Options{Source: nopSource{}, Downlink: dl})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	flows := []shaper.Flow{{ID: shaper.FlowID{SEID: 1, QERID: 1}, QFI: 1, Direction: shaper.Downlink, MBR: 5e6, Mark: 1}}
	if _, err := dl.Apply(context.Background(), flows); err != nil || rec.last.LinkRate != 30e6 {
		t.Fatalf("before reload: link %v, err %v", rec.last, err)
	}
	write("n3: n3test\nlink_rate: 50mbit\npolicy:\n  non_gbr_min: 2mbit\n")
	reload(log, path, override, cfg, dl, nil, eng)
	if _, err := dl.Apply(context.Background(), flows); err != nil {
		t.Fatal(err)
	}
	fc, _ := rec.last.FlowClass(flows[0].ID)
	if rec.last.LinkRate != 50e6 || fc.Rate != 2e6 {
		t.Fatalf("after reload: link %d, flow rate %d; want 50mbit and 2mbit", rec.last.LinkRate, fc.Rate)
	}
	// A broken file is refused; the running policy stays.
	write("n3: n3test\nlink_rate: lots\n")
	reload(log, path, override, cfg, dl, nil, eng)
	if _, err := dl.Apply(context.Background(), flows); err != nil || rec.last.LinkRate != 50e6 {
		t.Fatalf("after a bad reload: link %d, err %v; want 50mbit kept", rec.last.LinkRate, err)
	}
}

// nopSource has no flows and no events.
type nopSource struct{}

func (nopSource) Snapshot(context.Context) ([]shaper.Flow, error) { return nil, nil }
func (nopSource) Events(context.Context) (<-chan watch.Event, error) {
	return nil, watch.ErrEventsNotSupported
}
