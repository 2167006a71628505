package backends

import (
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// A writer that names one backend on a device holding the other's tree is
// refused with one line naming what the device holds, the device left as
// it was; with Force the other backend's own Reset removes its objects
// first, so none of them is left behind under the new tree.
func TestOpenWriterOnTheOtherBackendsTree(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNetNSPrefix(t, "bo-")
	dev := testenv.UniqueName("bo")
	ns.AddVethPair(t, dev, dev+"p")
	ns.Run(t, "tc", "qdisc", "add", "dev", dev, "root", "handle", "6765:", "htb") // the edt backend's root
	o := Options{Backend: "htb", NetNS: ns.Handle, Writer: "apply", LockDir: t.TempDir()}
	_, err := Open(dev, o)
	want := "dev " + dev + " holds gtpqos's edt backend's objects, not htb's: remove them first with `gtpqos reset --dev " + dev + "`, or pass --force to replace them"
	if err == nil || err.Error() != want {
		t.Fatalf("open htb over edt's tree: %v\nwant: %s", err, want)
	}
	if out := ns.Run(t, "tc", "qdisc", "show", "dev", dev, "root"); !strings.Contains(out, "htb 6765:") {
		t.Fatalf("refused open changed the device: %s", out)
	}
	o.Force = true
	be, err := Open(dev, o)
	if err != nil {
		t.Fatalf("open htb over edt's tree with force: %v", err)
	}
	defer be.Close()
	if out := ns.Run(t, "tc", "qdisc", "show", "dev", dev, "root"); strings.Contains(out, "6765:") {
		t.Errorf("forced open left the edt tree: %s", out)
	}
	// The device now holds neither: a reader opens the default, and a
	// writer naming edt is not refused for htb's sake.
	if other, ok, err := otherOwner(Device{Name: dev, Handle: handleIn(t, ns)}, registry["edt"]); err != nil || ok {
		t.Errorf("after the forced open another backend owns the device: %s, %v", other.name, err)
	}
}

// handleIn is a route-netlink handle in ns, closed when the test ends.
func handleIn(t *testing.T, ns *testenv.NetNS) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(ns.Handle, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// Forcing edt onto htb's tree on a kernel that cannot run edt (this host
// has no sch_fq) is refused before htb's tree is touched.
func TestOpenForcedEdtRefusedBeforeHTBTreeGoes(t *testing.T) {
	testenv.SkipShort(t)
	if registry["edt"].probe() == nil {
		t.Skip("this kernel can run edt: the refusal is for one that cannot")
	}
	ns := testenv.NewNetNSPrefix(t, "bo-")
	dev := testenv.UniqueName("bo")
	ns.AddVethPair(t, dev, dev+"p")
	ns.Run(t, "tc", "qdisc", "add", "dev", dev, "root", "handle", "6771:", "htb")
	_, err := Open(dev, Options{Backend: "edt", Force: true, NetNS: ns.Handle, Writer: "apply", LockDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not replacing the htb backend's objects") {
		t.Fatalf("forced edt over htb's tree: %v", err)
	}
	if out := ns.Run(t, "tc", "qdisc", "show", "dev", dev, "root"); !strings.Contains(out, "htb 6771:") {
		t.Errorf("refused open removed htb's tree: %s", out)
	}
}
