package lab

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// namespace is one named network namespace of the lab with a netlink
// handle bound to it.
type namespace struct {
	name   string
	handle netns.NsHandle
	nl     *netlink.Handle
}

// randomSuffix returns 8 hex digits, so concurrent labs never collide.
func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// inNS runs fn on a fresh OS thread switched into ns. The thread is never
// returned to the scheduler (the goroutine exits while locked, so the
// runtime discards the thread), which keeps namespace state from leaking
// into other goroutines even if switching back would fail.
func inNS(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("enter netns: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// newNamespace creates the named namespace and a netlink handle in it, and
// brings lo up.
func newNamespace(name string) (*namespace, error) {
	var h netns.NsHandle
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // discarded thread: see inNS
		var err error
		h, err = netns.NewNamed(name)
		errc <- err
	}()
	if err := <-errc; err != nil {
		return nil, fmt.Errorf("create netns %s: %w", name, err)
	}
	// Route netlink only: xfrm or netfilter netlink may be missing.
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
	if err != nil {
		h.Close()
		_ = netns.DeleteNamed(name)
		return nil, fmt.Errorf("netlink handle in netns %s: %w", name, err)
	}
	ns := &namespace{name: name, handle: h, nl: nl}
	lo, err := nl.LinkByName("lo")
	if err == nil {
		err = nl.LinkSetUp(lo)
	}
	if err != nil {
		ns.close()
		return nil, fmt.Errorf("netns %s: bring lo up: %w", name, err)
	}
	return ns, nil
}

// close deletes the namespace; links inside it go with it.
func (n *namespace) close() error {
	if n == nil {
		return nil
	}
	n.nl.Close()
	n.handle.Close()
	if err := netns.DeleteNamed(n.name); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("delete netns %s: %w", n.name, err)
	}
	return nil
}

// sysctl writes a /proc/sys/net value inside the namespace (the file
// resolves to the namespace of the thread that opens it).
func (n *namespace) sysctl(path, value string) error {
	return inNS(n.handle, func() error {
		if err := os.WriteFile("/proc/sys/"+path, []byte(value), 0o644); err != nil {
			return fmt.Errorf("netns %s: sysctl %s=%s: %w", n.name, path, value, err)
		}
		return nil
	})
}
