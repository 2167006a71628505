// Package probens runs a kernel probe in a network namespace of its own,
// which no one else sees and which vanishes with the probe, so finding out
// what the kernel has never writes to a device being shaped.
package probens

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Error says why the probe's namespace could not be set up (creating one
// needs CAP_SYS_ADMIN): the probe did not run.
type Error struct{ Why string }

func (e *Error) Error() string { return e.Why }

// Run calls probe with a route-netlink handle in a fresh network namespace
// and that namespace's loopback, on a thread of its own that never leaves
// it (Go ends the thread with its goroutine), and returns probe's result,
// or an *Error when the namespace could not be set up.
func Run(probe func(h *netlink.Handle, lo netlink.Link) error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see Run
		done <- inNewNetNS(probe)
	}()
	return <-done
}

func inNewNetNS(probe func(h *netlink.Handle, lo netlink.Link) error) error {
	ns, err := netns.New()
	if err != nil {
		return &Error{fmt.Sprintf("create a network namespace to probe in: %v", err)}
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return &Error{fmt.Sprintf("netlink in the probe's namespace: %v", err)}
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return &Error{fmt.Sprintf("loopback of the probe's namespace: %v", err)}
	}
	return probe(h, lo)
}
