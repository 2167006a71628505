// Package testenv gates tests on what the machine offers (root, commands,
// kernel features) and builds throwaway network namespaces for them, removed
// when their test ends and, should the run be interrupted (SIGINT, SIGTERM),
// before the process goes.
//
// Every gate skips with a one-line reason; nothing here fails a test for a
// missing capability.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// RequireRoot skips the test unless it runs as root (CAP_NET_ADMIN and
// the right to create network namespaces).
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root: creates network namespaces and tc objects (run 'make test' as root)")
	}
}

// RequireCmd skips the test unless every named command is on PATH.
func RequireCmd(tb testing.TB, names ...string) {
	tb.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			tb.Skipf("needs %q on PATH ('make deps' installs it)", n)
		}
	}
}

// UniqueName returns prefix plus a random hex suffix, short enough for an
// interface name (15 bytes) when prefix is at most 7 bytes.
func UniqueName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// NetNS is a named network namespace created for one test.
type NetNS struct {
	// Name is the name under /run/netns (usable with 'ip netns exec').
	Name string
	// Handle is an open handle on the namespace.
	Handle netns.NsHandle
}

// NewNetNS creates a fresh named network namespace with lo up, and removes
// it when the test ends. It requires root and skips otherwise.
func NewNetNS(tb testing.TB) *NetNS {
	tb.Helper()
	return NewNetNSPrefix(tb, "gqt-")
}

// NewNetNSPrefix is NewNetNS with a name of prefix (at most 7 bytes) and a
// random suffix, for tests that keep their namespaces apart by name.
func NewNetNSPrefix(tb testing.TB, prefix string) *NetNS {
	tb.Helper()
	RequireRoot(tb)
	name := UniqueName(prefix)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		tb.Fatalf("get current netns: %v", err)
	}
	defer orig.Close()
	h, err := netns.NewNamed(name)
	if err != nil {
		tb.Fatalf("create netns %s: %v", name, err)
	}
	if err := netns.Set(orig); err != nil {
		tb.Fatalf("return to original netns: %v", err)
	}
	ns := &NetNS{Name: name, Handle: h}
	track(name)
	tb.Cleanup(func() {
		h.Close()
		_ = netns.DeleteNamed(name)
		untrack(name)
	})
	ns.Run(tb, "ip", "link", "set", "lo", "up")
	return ns
}

// Run runs a command inside the namespace ('ip netns exec') and returns its
// combined output; it fails the test if the command fails.
func (n *NetNS) Run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := n.Try(name, args...)
	if err != nil {
		tb.Fatalf("in netns %s: %s %s: %v\n%s", n.Name, name, strings.Join(args, " "), err, out)
	}
	return out
}

// Try runs a command inside the namespace and returns its combined output
// and error, without failing the test.
func (n *NetNS) Try(name string, args ...string) (string, error) {
	full := append([]string{"netns", "exec", n.Name, name}, args...)
	out, err := exec.Command("ip", full...).CombinedOutput()
	return string(out), err
}

// Do runs f with the calling goroutine's thread inside the namespace
// (what f opens — netlink sockets, lock files keyed by namespace — belongs
// to it), and returns the thread to its namespace after.
func (n *NetNS) Do(tb testing.TB, f func()) {
	tb.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		tb.Fatalf("get current netns: %v", err)
	}
	defer orig.Close()
	if err := netns.Set(n.Handle); err != nil {
		tb.Fatalf("enter netns %s: %v", n.Name, err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			tb.Fatalf("return from netns %s: %v", n.Name, err)
		}
	}()
	f()
}

// AddVethPair creates a veth pair a<->b, both ends inside this namespace and
// up. It is removed with the namespace.
func (n *NetNS) AddVethPair(tb testing.TB, a, b string) {
	tb.Helper()
	n.Run(tb, "ip", "link", "add", a, "type", "veth", "peer", "name", b)
	n.Run(tb, "ip", "link", "set", a, "up")
	n.Run(tb, "ip", "link", "set", b, "up")
}

func runOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// SkipShortSlow skips, under `go test -short` (make unit), a test that
// takes many seconds for a reason other than throughput (why); make test
// runs it.
func SkipShortSlow(tb testing.TB, why string) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: " + why + " (run without -short: make test)")
	}
}

// SkipShort skips a test that measures throughput through the lab under
// `go test -short` (make unit): it takes seconds and wants a quiet host.
func SkipShort(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: measures throughput through the lab (run without -short: make test)")
	}
}
