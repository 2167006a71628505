package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/free5gc/gtpqos/watch"
)

// lockIfWatched refuses to go on when a running 'gtpqos watch' holds dev's
// lock in lockDir (the daemon would undo, or trust a stale memory of, what
// a one-shot command changes), and otherwise holds that lock so no watch
// starts meanwhile. Without a lock file no watch ever ran on the device,
// and none is created. what names the command for the message ("reset").
func lockIfWatched(lockDir, dev, what, hint string) (unlock func(), err error) {
	if _, err := os.Stat(filepath.Join(lockDir, dev+".lock")); err != nil {
		return func() {}, nil
	}
	lock, err := watch.LockDevice(lockDir, dev)
	if err != nil {
		return nil, fmt.Errorf("dev %s: not %s: %w (%s)", dev, what, err, hint)
	}
	return func() { _ = lock.Unlock() }, nil
}
