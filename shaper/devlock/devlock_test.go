package devlock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// TestMain lets the test binary act as another process holding a lock:
// with DEVLOCK_HOLD=dir:dev it takes the lock as a "watch", prints
// "held", and keeps it until its stdin closes.
func TestMain(m *testing.M) {
	if spec := os.Getenv("DEVLOCK_HOLD"); spec != "" {
		dir, dev, _ := strings.Cut(spec, ":")
		lk, err := Acquire(dir, dev, Holder{Command: "watch", Role: "n3"})
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("held\n")
		buf := make([]byte, 1)
		_, _ = os.Stdin.Read(buf)
		_ = lk.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAcquireRefusesSecondWriterNamingTheFirst(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir, "n3x", Holder{Command: "apply"})
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	_, err = Acquire(dir, "n3x", Holder{Command: "reset"})
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("second lock on the same device: err = %v, want a *HeldError", err)
	}
	msg := err.Error()
	for _, want := range []string{"device n3x", "being changed by another gtpqos apply", "pid " + strconv.Itoa(os.Getpid()), filepath.Join(dir, "n3x.lock")} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("refusal %q: want one line containing %q", msg, want)
		}
	}
	if held.By.Command != "apply" || held.By.PID != os.Getpid() {
		t.Errorf("holder %+v, want apply by this process", held.By)
	}
	other, err := Acquire(dir, "n6x", Holder{Command: "watch"})
	if err != nil {
		t.Fatalf("lock on another device: %v", err)
	}
	other.Release()
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "n3x.lock")); !os.IsNotExist(err) {
		t.Errorf("lock file still there after Release: %v", err)
	}
	l2, err := Acquire(dir, "n3x", Holder{Command: "reset"})
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Release()
	if _, err := Acquire(dir, "a/b", Holder{Command: "apply"}); err == nil {
		t.Error("a device name with a slash was accepted")
	}
}

// A lock held by another process (the test binary re-run as a holder):
// refused with its pid and command; Held lists it with its role; once the
// holder is gone the lock is free again, and a holder killed outright
// leaves a file that is neither held nor listed.
func TestLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "DEVLOCK_HOLD="+dir+":n3y")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if got := string(buf[:n]); got != "held\n" {
		t.Fatalf("holder said %q", got)
	}
	_, err = Acquire(dir, "n3y", Holder{Command: "apply"})
	want := "device n3y is already managed by another gtpqos watch (pid " + strconv.Itoa(cmd.Process.Pid) + ", since "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("apply under a watch: err = %v, want it to start with %q", err, want)
	}
	hs := Held(dir)
	if len(hs) != 1 || hs[0].Dev != "n3y" || hs[0].Role != "n3" || hs[0].Command != "watch" || hs[0].PID != cmd.Process.Pid {
		t.Errorf("Held = %+v, want the watch on n3y", hs)
	}
	// Killed outright: the kernel drops the lock; the file stays behind.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	stdin.Close()
	if hs := Held(dir); len(hs) != 0 {
		t.Errorf("Held after the holder was killed = %+v, want none", hs)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := Acquire(dir, "n3y", Holder{Command: "apply"})
		if err == nil {
			l.Release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock still held after its holder died: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	h := Holder{Command: "watch", Role: "n6", Dev: "eth2", PID: 42, Since: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	got, ok := parseRecord([]byte(h.record()))
	if !ok || got != h {
		t.Errorf("parseRecord(record) = %+v, %v; want %+v", got, ok, h)
	}
	for _, torn := range []string{"", "pid=", "pid=42", "command=apply\n"} {
		if _, ok := parseRecord([]byte(torn)); ok {
			t.Errorf("parseRecord(%q) accepted a torn record", torn)
		}
	}
}

// Device names are per network namespace: eth1 here and eth1 in another
// namespace are two devices with two locks, and Held lists only this
// namespace's.
func TestLocksArePerNetworkNamespace(t *testing.T) {
	ns := testenv.NewNetNS(t)
	dir := t.TempDir()
	here, err := Acquire(dir, "v0", Holder{Command: "watch", Role: "n3"})
	if err != nil {
		t.Fatal(err)
	}
	defer here.Release()
	var there *Lock
	var inNS []Holder
	ns.Do(t, func() {
		there, err = Acquire(dir, "v0", Holder{Command: "apply"})
		inNS = Held(dir)
	})
	if err != nil {
		t.Fatalf("v0 in another namespace refused while this namespace's v0 is locked: %v", err)
	}
	defer there.Release()
	if here.Path() == there.Path() || !strings.Contains(there.Path(), "@netns") {
		t.Errorf("lock files %s and %s, want one per namespace", here.Path(), there.Path())
	}
	if len(inNS) != 1 || inNS[0].Command != "apply" {
		t.Errorf("Held in the other namespace = %+v, want its apply only", inNS)
	}
	if hs := Held(dir); len(hs) != 1 || hs[0].Command != "watch" {
		t.Errorf("Held here = %+v, want this namespace's watch only", hs)
	}
}
