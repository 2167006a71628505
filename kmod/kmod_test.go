package kmod

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/free5gc/gtpqos/gtpnl"
)

// fakeModule lays out sysfs/procfs files of a loaded gtp5g under a temp
// dir; patched adds the gtp5g-patch's qos_mark knob.
func fakeModule(t *testing.T, patched bool) Module {
	t.Helper()
	root := t.TempDir()
	m := At(root)
	mustWrite(t, filepath.Join(m.SysDir, "version"), "0.10.2\n")
	mustWrite(t, m.PolicerPath(), "QoS Enable: 0\n")
	if patched {
		mustWrite(t, m.MarkModePath(), "off\n")
	}
	return m
}

func mustWrite(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNotLoaded(t *testing.T) {
	m := At(t.TempDir())
	if ok, err := m.Loaded(); ok || err != nil {
		t.Fatalf("Loaded = %v, %v; want false, nil", ok, err)
	}
	calls := map[string]func() error{
		"Version":     func() error { _, err := m.Version(); return err },
		"Policer":     func() error { _, err := m.Policer(); return err },
		"SetPolicer":  func() error { return m.SetPolicer(true) },
		"MarkMode":    func() error { _, err := m.MarkMode(); return err },
		"SetMarkMode": func() error { return m.SetMarkMode(gtpnl.MarkQFI) },
	}
	for name, call := range calls {
		err := call()
		if err == nil || err.Error() != "gtp5g module not loaded" || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s without the module: %v; want exactly \"gtp5g module not loaded\" matching os.ErrNotExist", name, err)
		}
	}
}

func TestLoadedVersion(t *testing.T) {
	m := fakeModule(t, false)
	if ok, err := m.Loaded(); !ok || err != nil {
		t.Fatalf("Loaded = %v, %v; want true, nil", ok, err)
	}
	v, err := m.Version()
	if err != nil || v != "0.10.2" {
		t.Fatalf("Version = %q, %v; want 0.10.2", v, err)
	}
}

func TestPolicer(t *testing.T) {
	m := fakeModule(t, false)
	on, err := m.Policer()
	if err != nil || on {
		t.Fatalf("Policer = %v, %v; want false (gtp5g's default)", on, err)
	}
	for _, want := range []bool{true, false, true} {
		if err := m.SetPolicer(want); err != nil {
			t.Fatalf("SetPolicer(%v): %v", want, err)
		}
		b, _ := os.ReadFile(m.PolicerPath())
		if w := map[bool]string{true: "1", false: "0"}[want]; string(b) != w {
			t.Fatalf("after SetPolicer(%v) the knob holds %q, want %q", want, b, w)
		}
		if got, err := m.Policer(); err != nil || got != want {
			t.Fatalf("Policer after SetPolicer(%v) = %v, %v", want, got, err)
		}
	}
}

func TestParsePolicer(t *testing.T) {
	for in, want := range map[string]bool{"QoS Enable: 0\n": false, "QoS Enable: 1\n": true, "1\n": true, "0": false} {
		got, err := parsePolicer("qos", in)
		if err != nil || got != want {
			t.Errorf("parsePolicer(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "QoS Enable: x", "on"} {
		if _, err := parsePolicer("/proc/gtp5g/qos", bad); err == nil || !strings.Contains(err.Error(), "/proc/gtp5g/qos") {
			t.Errorf("parsePolicer(%q) = %v; want an error naming the file", bad, err)
		}
	}
}

func TestMarkModeKnob(t *testing.T) {
	m := fakeModule(t, true)
	if mode, err := m.MarkMode(); err != nil || mode != gtpnl.MarkOff {
		t.Fatalf("MarkMode = %v, %v; want off", mode, err)
	}
	for _, mode := range []gtpnl.MarkMode{gtpnl.MarkQFI, gtpnl.MarkFlow, gtpnl.MarkOff} {
		if err := m.SetMarkMode(mode); err != nil {
			t.Fatalf("SetMarkMode(%v): %v", mode, err)
		}
		b, _ := os.ReadFile(m.MarkModePath())
		if string(b) != mode.String() {
			t.Fatalf("knob holds %q after SetMarkMode(%v)", b, mode)
		}
		if got, err := m.MarkMode(); err != nil || got != mode {
			t.Fatalf("MarkMode = %v, %v; want %v", got, err, mode)
		}
	}
	if err := m.SetMarkMode(7); err == nil {
		t.Fatal("SetMarkMode(7) succeeded")
	}
}

// A stock module has no qos_mark knob: the error names the knob, not a
// missing module.
func TestMarkModeKnobAbsent(t *testing.T) {
	m := fakeModule(t, false)
	_, err := m.MarkMode()
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), m.MarkModePath()) || errors.Is(err, ErrNotLoaded) {
		t.Fatalf("MarkMode on stock = %v; want an error naming %s, matching os.ErrNotExist, not ErrNotLoaded", err, m.MarkModePath())
	}
}

func TestPermissionError(t *testing.T) {
	m := fakeModule(t, false)
	err := m.fileError("set", m.PolicerPath(), "gtp5g native policer", &fs.PathError{Op: "open", Path: m.PolicerPath(), Err: fs.ErrPermission})
	if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), "needs root") || !strings.Contains(err.Error(), m.PolicerPath()) {
		t.Fatalf("permission error = %v; want os.ErrPermission, naming the knob and root", err)
	}
}

func TestDKMS(t *testing.T) {
	root := t.TempDir()
	m := At(root)
	if _, err := m.DKMS(); !errors.Is(err, ErrNoDKMS) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("DKMS without /var/lib/dkms = %v; want ErrNoDKMS", err)
	}
	if err := os.MkdirAll(filepath.Dir(m.DKMSDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := m.DKMS(); err != nil || len(b) != 0 {
		t.Fatalf("DKMS without gtp5g = %v, %v; want empty", b, err)
	}
	// gtp5g 0.10.2+qos installed for 6.1.0-18, built for 6.1.0-20; stock 0.10.2 built.
	for _, d := range []string{"0.10.2+qos/6.1.0-18-amd64/x86_64/module", "0.10.2+qos/6.1.0-20-amd64/x86_64/module", "0.10.2/6.1.0-18-amd64/x86_64/module", "0.10.2+qos/source"} {
		if err := os.MkdirAll(filepath.Join(m.DKMSDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("0.10.2+qos/6.1.0-18-amd64/x86_64", filepath.Join(m.DKMSDir, "kernel-6.1.0-18-amd64-x86_64")); err != nil {
		t.Fatal(err)
	}
	got, err := m.DKMS()
	if err != nil {
		t.Fatalf("DKMS: %v", err)
	}
	want := []DKMSBuild{
		{Version: "0.10.2", Kernel: "6.1.0-18-amd64", Arch: "x86_64"},
		{Version: "0.10.2+qos", Kernel: "6.1.0-18-amd64", Arch: "x86_64", Installed: true},
		{Version: "0.10.2+qos", Kernel: "6.1.0-20-amd64", Arch: "x86_64"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DKMS builds differ (-want +got):\n%s", diff)
	}
	if s := got[1].String(); s != "gtp5g/0.10.2+qos, 6.1.0-18-amd64, x86_64: installed" {
		t.Errorf("String = %q", s)
	}
}

// TestHostNoModule checks the real host: here gtp5g is not loaded.
func TestHostNoModule(t *testing.T) {
	if ok, _ := Host().Loaded(); ok {
		t.Skip("gtp5g is loaded on this host")
	}
	if _, err := Host().Policer(); err == nil || err.Error() != "gtp5g module not loaded" {
		t.Fatalf("Host().Policer() = %v; want \"gtp5g module not loaded\"", err)
	}
}
