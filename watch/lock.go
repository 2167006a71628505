package watch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DefaultLockDir is where the per-device lock files live.
const DefaultLockDir = "/run/gtpqos"

// Lock is an exclusive advisory lock (flock) on one device, held for the
// daemon's lifetime so a second instance on the same device refuses to
// start. The kernel releases it when the process dies.
type Lock struct {
	f *os.File
}

// LockDevice takes the lock for dev in dir (created if missing). It fails
// at once, naming the device and the lock file, when another process holds
// it.
func LockDevice(dir, dev string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, dev+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock for device %s: %w", dev, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("device %s is already managed by another gtpqos watch (lock %s is held)", dev, path)
		}
		return nil, fmt.Errorf("lock %s for device %s: %w", path, dev, err)
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	return &Lock{f: f}, nil
}

// Unlock releases the lock. The file stays (removing it would race with a
// new instance taking it).
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// LockIfWatched refuses to go on when a running `gtpqos watch` holds dev's
// lock in dir (the daemon would undo, or trust a stale memory of, what a
// one-shot command changes), and otherwise holds that lock so no watch
// starts meanwhile. Without a lock file no watch ever ran on the device,
// and none is created. what names the command for the message ("reset"),
// hint says what to do instead.
func LockIfWatched(dir, dev, what, hint string) (unlock func(), err error) {
	if _, err := os.Stat(filepath.Join(dir, dev+".lock")); err != nil {
		return func() {}, nil
	}
	lock, err := LockDevice(dir, dev)
	if err != nil {
		return nil, fmt.Errorf("dev %s: not %s: %w (%s)", dev, what, err, hint)
	}
	return func() { _ = lock.Unlock() }, nil
}
