// Package devlock is the lock every writer of a device's QoS state holds
// for the whole of its write: `gtpqos apply`, `reset`, `ab --dev` and
// `watch` (for its lifetime). Two writers on one device would interleave
// their reads and writes and leave a tree that matches neither; with the
// lock, the second one refuses at once with one line naming the first (its
// command and pid, recorded in the lock file).
//
// The lock is flock(2) on <dir>/<dev>.lock: the kernel drops it when its
// holder dies, so a killed writer never leaves a stale lock. Device names
// are per network namespace, so outside the initial namespace the file
// name also carries the namespace's inode (<dev>@netns<inode>.lock).
//
// It reaches no network device; it may import the standard library and
// x/sys.
package devlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultDir is where the lock files live.
const DefaultDir = "/run/gtpqos"

// Holder says who holds (or wants) a device's lock.
type Holder struct {
	// Command is the gtpqos command: "apply", "reset", "watch", "ab".
	Command string
	// Role is the device's role for a watch ("n3" or "n6"), else "".
	Role string
	// Dev is the device.
	Dev string
	// PID is the holder's process id; Since when it took the lock.
	PID   int
	Since time.Time
}

// String names the holder for messages: "gtpqos apply (pid 1234, since
// 22:01:05)".
func (h Holder) String() string {
	if d := h.details(); d != "" {
		return h.name() + " (" + d + ")"
	}
	return h.name()
}

// name is "gtpqos apply", or "gtpqos process" when the command is unknown.
func (h Holder) name() string {
	if h.Command == "" {
		return "gtpqos process"
	}
	return "gtpqos " + h.Command
}

// details is "pid 1234, since 22:01:05", as far as they are known.
func (h Holder) details() string {
	var parts []string
	if h.PID > 0 {
		parts = append(parts, fmt.Sprintf("pid %d", h.PID))
	}
	if !h.Since.IsZero() {
		parts = append(parts, "since "+h.Since.Local().Format("15:04:05"))
	}
	return strings.Join(parts, ", ")
}

// record is the lock file's one line.
func (h Holder) record() string {
	return fmt.Sprintf("pid=%d command=%s role=%s dev=%s since=%s\n", h.PID, h.Command, h.Role, h.Dev, h.Since.UTC().Format(time.RFC3339))
}

// parseRecord reads a lock file's line; false when it is empty or torn.
func parseRecord(b []byte) (Holder, bool) {
	var h Holder
	line, _, _ := strings.Cut(string(b), "\n")
	for _, kv := range strings.Fields(line) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "pid":
			h.PID, _ = strconv.Atoi(v)
		case "command":
			h.Command = v
		case "role":
			h.Role = v
		case "dev":
			h.Dev = v
		case "since":
			h.Since, _ = time.Parse(time.RFC3339, v)
		}
	}
	return h, h.PID > 0 && h.Command != ""
}

// HeldError says the device's lock is held by another process.
type HeldError struct {
	// Dev and Path name the device and the lock file.
	Dev, Path string
	// By is the holder as far as it could be told.
	By Holder
}

// Error is one line naming the device and the holder.
func (e *HeldError) Error() string {
	what := "in use by"
	switch e.By.Command {
	case "watch":
		what = "already managed by"
	case "apply", "ab":
		what = "being changed by"
	case "reset":
		what = "being reset by"
	}
	d := e.By.details()
	if d != "" {
		d += "; "
	}
	return fmt.Sprintf("device %s is %s another %s (%slock %s is held)", e.Dev, what, e.By.name(), d, e.Path)
}

// Lock is a held device lock.
type Lock struct {
	f    *os.File
	path string
}

// Path returns the lock file's path.
func (l *Lock) Path() string { return l.path }

// Acquire takes dev's lock in dir (created if missing) for h, without
// waiting: when another process holds it, the error is a *HeldError naming
// that process. h.PID and h.Since are filled in.
//
// Whoever can write dir could plant a symlink or a file of their own under
// the lock's name, so dir must be a real directory that only its owner can
// write, the lock file is only ever written when this
// call created it (O_EXCL, O_NOFOLLOW), and a file left by a killed writer
// (not locked by anyone) is unlinked and made anew, whoever owned it: a
// stale lock never blocks the next writer.
func Acquire(dir, dev string, h Holder) (*Lock, error) {
	if dev == "" || strings.ContainsAny(dev, "/\x00") {
		return nil, fmt.Errorf("lock: invalid device name %q", dev)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, fileName(dev))
	h.Dev, h.PID, h.Since = dev, os.Getpid(), time.Now()
	for try := 0; try < 10; try++ {
		l, retry, err := tryAcquire(path, dev, h)
		if !retry {
			return l, err
		}
	}
	return nil, fmt.Errorf("lock %s for device %s: the lock file keeps being replaced", path, dev)
}

// checkDir makes dir (0755) if it is missing and refuses one that is not a
// directory, is a symlink, or is writable by group or others. Its owner may
// be another user (the watch service's, when root runs apply): nothing in
// it is ever followed or written unless this process created it.
func checkDir(dir string) error {
	if dir == "" {
		return errors.New("lock directory: empty path (give --lock-dir a directory)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lock directory %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("lock directory %s: %w", dir, err)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("lock directory %s: is a symlink; give the directory itself", dir)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("lock directory %s: not a directory", dir)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("lock directory %s: writable by group or others (mode %04o); another user could plant the lock file", dir, st.Mode&0o7777)
	}
	return nil
}

// tryAcquire makes one attempt; retry is true when the file changed under
// it (a holder let go, a stale file was removed) and the caller tries again.
func tryAcquire(path, dev string, h Holder) (l *Lock, retry bool, err error) {
	const flags = unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|flags, 0o644)
	if err == nil {
		return own(os.NewFile(uintptr(fd), path), path, dev, h)
	}
	if !errors.Is(err, unix.EEXIST) {
		return nil, false, fmt.Errorf("lock for device %s: create %s: %w", dev, path, err)
	}
	// Someone's file: open it only to lock and read it, never to write.
	fd, err = unix.Open(path, unix.O_RDONLY|flags, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, true, nil // its holder removed it meanwhile
	case errors.Is(err, unix.ELOOP):
		return nil, false, fmt.Errorf("lock for device %s: %s is a symlink; refusing to follow it", dev, path)
	case err != nil:
		return nil, false, fmt.Errorf("lock for device %s: open %s: %w", dev, path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("lock for device %s: %s is not a regular file", dev, path)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, fmt.Errorf("lock %s for device %s: %w", path, dev, err)
		}
		by, gone := holderOf(f, path)
		if gone {
			return nil, true, nil
		}
		return nil, false, &HeldError{Dev: dev, Path: path, By: by}
	}
	// Not held: left by a writer that died. Remove it (while holding its
	// lock, so no one else takes it meanwhile) and start afresh.
	if sameFile(f, path) {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, false, fmt.Errorf("lock for device %s: remove the stale %s: %w", dev, path, err)
		}
	}
	return nil, true, nil
}

// own locks the file this process just created and writes the holder into
// it; on any failure the file is removed again, so no empty lock file stays.
func own(f *os.File, path, dev string, h Holder) (*Lock, bool, error) {
	fail := func(retry bool, err error) (*Lock, bool, error) {
		if sameFile(f, path) {
			_ = os.Remove(path)
		}
		f.Close()
		return nil, retry, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			f.Close() // another writer took the fresh file first: ask again
			return nil, true, nil
		}
		return fail(false, fmt.Errorf("lock %s for device %s: %w", path, dev, err))
	}
	if !sameFile(f, path) {
		f.Close() // removed as stale before we locked it
		return nil, true, nil
	}
	if _, err := f.WriteAt([]byte(h.record()), 0); err != nil {
		return fail(false, fmt.Errorf("lock %s: write holder: %w", path, err))
	}
	return &Lock{f: f, path: path}, false, nil
}

// Release removes the lock file and drops the lock. The file goes first,
// while the lock is still held, so the next writer creates a fresh one.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	if sameFile(l.f, l.path) {
		_ = os.Remove(l.path)
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// sameFile reports whether the open file f is still the file at path.
func sameFile(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// holderOf tells who holds the lock on f (open on path): the record the
// holder wrote in the file, read through f so that it can be read even if
// the holder lets go meanwhile (the record is written just after the lock
// is taken, so it is read again a few times before it is given up on).
// gone is true when the holder let go (the file was removed): the caller
// tries again. Without a record, /proc/locks gives the holder's pid.
func holderOf(f *os.File, path string) (h Holder, gone bool) {
	buf := make([]byte, 512)
	for try := 0; try < 20; try++ {
		n, _ := f.ReadAt(buf, 0)
		if rec, ok := parseRecord(buf[:n]); ok {
			return rec, false
		}
		if !sameFile(f, path) {
			return Holder{}, true
		}
		time.Sleep(5 * time.Millisecond)
	}
	if pid := lockPID(path); pid != 0 {
		return Holder{PID: pid, Command: commandOf(pid)}, false
	}
	return Holder{}, false
}

// lockPID returns the pid that holds a flock on path according to
// /proc/locks, or 0 if it cannot be told.
func lockPID(path string) int {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	dev := uint64(sys.Dev)
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), sys.Ino)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == want {
			pid, _ := strconv.Atoi(f[4])
			return pid
		}
	}
	return 0
}

// commandOf guesses the gtpqos command of pid from its command line
// ("gtpqos apply ..." -> "apply"), or "" if it is not a gtpqos command.
func commandOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) >= 2 && strings.HasPrefix(filepath.Base(args[0]), "gtpqos") {
		return args[1]
	}
	return ""
}

// Held returns the holders of the locks in dir that are held now and
// belong to this network namespace (a watch's devices, for `gtpqos
// status`). A lock file left by a killed process is not held and is left
// out.
func Held(dir string) []Holder {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	suffix := nsSuffix() + ".lock"
	var out []Holder
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, suffix) || (suffix == ".lock" && strings.Contains(name, "@netns")) {
			continue
		}
		path := filepath.Join(dir, name)
		pid := lockPID(path)
		if pid == 0 {
			continue
		}
		b, err := os.ReadFile(path)
		if rec, ok := parseRecord(b); err == nil && ok && rec.PID == pid {
			out = append(out, rec)
		}
	}
	return out
}

// fileName is dev's lock file name in this network namespace.
func fileName(dev string) string { return dev + nsSuffix() + ".lock" }

// initNetNSIno is the inode number recent kernels give the initial
// network namespace (PROC_NET_INIT_INO); older ones (6.1) number it like
// any other, so pid 1's namespace is asked first.
const initNetNSIno = 0xEFFFFFF9

// nsSuffix is "" in the initial network namespace (pid 1's, or where the
// namespace cannot be told), else "@netns<inode>": eth1 in two namespaces
// is two devices. It reads the calling thread's namespace, the one a
// netlink handle opened by this thread works in.
func nsSuffix() string {
	self, err := os.Stat("/proc/thread-self/ns/net")
	if err != nil {
		return ""
	}
	sys, ok := self.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if init, err := os.Stat("/proc/1/ns/net"); err == nil {
		if os.SameFile(self, init) {
			return ""
		}
	} else if sys.Ino == initNetNSIno {
		return ""
	}
	return fmt.Sprintf("@netns%d", sys.Ino)
}
