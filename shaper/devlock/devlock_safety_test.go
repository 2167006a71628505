package devlock

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A symlink planted under the lock's name is refused and its target is
// left as it was: root must never write through a path another user made.
func TestAcquireRefusesPlantedSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, fileName("v0"))); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(dir, "v0", Holder{Command: "apply"})
	if err == nil {
		l.Release()
		t.Fatal("Acquire followed a planted symlink")
	}
	if !strings.Contains(err.Error(), "symlink") {
		t.Errorf("error %q does not say symlink", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("symlink target now holds %q", b)
	}
}

// A regular file someone else left under the lock's name (not locked) is
// replaced, never written: its inode keeps its bytes.
func TestAcquireReplacesStaleFileWithoutWritingIt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, fileName("v0"))
	if err := os.WriteFile(path, []byte("not a lock record\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	l, err := Acquire(dir, "v0", Holder{Command: "apply"})
	if err != nil {
		t.Fatalf("Acquire over a stale file: %v", err)
	}
	defer l.Release()
	if b, _ := io.ReadAll(old); string(b) != "not a lock record\n" {
		t.Errorf("the stale file was written: %q", b)
	}
	if sameFile(old, path) {
		t.Error("the stale file is still the lock file; want a fresh one")
	}
}

func TestAcquireRefusesUnsafeDirectories(t *testing.T) {
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{"", "empty path"},
		{open, "writable by group or others"},
		{link, "symlink"},
	} {
		l, err := Acquire(c.dir, "v0", Holder{Command: "apply"})
		if err == nil {
			l.Release()
			t.Errorf("Acquire(%q) succeeded", c.dir)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Acquire(%q) = %q, want it to say %q", c.dir, err, c.want)
		}
	}
}

// A lock file left by a root writer that was killed (root-owned, 0644)
// does not block the next writer running as another user.
func TestStaleRootLockDoesNotBlockAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to leave a root-owned lock and run a writer as uid 65534")
	}
	const nobody = 65534
	bin, err := os.MkdirTemp("", "devlock-bin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	dir := filepath.Join(bin, "locks")
	for _, d := range []string{bin, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bin, "devlock.test")
	if err := os.WriteFile(exe, self, 0o755); err != nil {
		t.Fatal(err)
	}
	// What a killed root writer leaves: a root-owned record nobody locks.
	stale := filepath.Join(dir, fileName("v0"))
	if err := os.WriteFile(stale, []byte("pid=1 command=apply role= dev=v0 since=2026-01-01T00:00:00Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "DEVLOCK_HOLD="+dir+":v0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	in.Close()
	_ = cmd.Wait()
	if strings.TrimSpace(line) != "held" {
		t.Fatalf("uid %d writer after a stale root lock: %q, want held", nobody, line)
	}
}
