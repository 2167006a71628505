package gtp5gtest

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// NS is a network namespace a test works in: the current (root) one when
// NetNS is nil, or one made with testenv.NewNetNS.
type NS struct {
	// Name names the namespace in error messages ("root", "gnb", ...).
	Name string
	// NetNS is the namespace; nil means the caller's own.
	NetNS *testenv.NetNS
}

// Root is the caller's own namespace, named "root" in messages.
func Root() NS { return NS{Name: "root"} }

// In wraps a namespace made with testenv.NewNetNS under a short name for
// messages.
func In(name string, ns *testenv.NetNS) NS { return NS{Name: name, NetNS: ns} }

// Do runs f on a locked thread inside the namespace. Sockets f opens stay
// in that namespace when other goroutines use them later.
func (n NS) Do(f func() error) error {
	if n.NetNS == nil {
		return f()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("netns %s: get current: %w", n.Name, err)
			return
		}
		defer orig.Close()
		if err := netns.Set(n.NetNS.Handle); err != nil {
			errc <- fmt.Errorf("netns %s: enter: %w", n.Name, err)
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			// leave the thread locked: it dies with this goroutine
			errc <- fmt.Errorf("netns %s: leave: %w", n.Name, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// IP runs the ip command in the namespace and fails the test on error.
func (n NS) IP(tb testing.TB, args ...string) {
	tb.Helper()
	if n.NetNS != nil {
		n.NetNS.Run(tb, "ip", args...)
		return
	}
	testenv.RequireCmd(tb, "ip")
	if out, err := n.TryIP(args...); err != nil {
		tb.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TryIP runs the ip command in the namespace and returns its combined
// output and error, without failing the test (for cleanups).
func (n NS) TryIP(args ...string) (string, error) {
	if n.NetNS != nil {
		return n.NetNS.Try("ip", args...)
	}
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip: %w", err)
	}
	return string(out), nil
}
