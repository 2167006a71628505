package edt

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ErrMapFull is what a write into a map that holds its max_entries
// returns. The kernel says E2BIG, which cilium/ebpf words as "key too big
// for map": the key is fine, the map has no room.
var ErrMapFull = errors.New("the map is full (its size is set when the program is loaded)")

// mapFull turns the kernel's E2BIG on a hash map update into ErrMapFull.
func mapFull(err error) error {
	if errors.Is(err, unix.E2BIG) {
		return ErrMapFull
	}
	return err
}
