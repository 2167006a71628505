package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/watch"
)

// openWatchedDev opens a netlink handle, checks that dev exists and, like
// lockIfWatched, refuses a device a running watch holds. The returned
// closer releases the lock and the handle.
func openWatchedDev(dev, lockDir, what, hint string) (*netlink.Handle, func(), error) {
	h, err := newHandle()
	if err != nil {
		return nil, nil, err
	}
	if err := checkDev(h, dev); err != nil {
		h.Close()
		return nil, nil, err
	}
	unlock, err := lockIfWatched(lockDir, dev, what, hint)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return h, func() { unlock(); h.Close() }, nil
}

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
