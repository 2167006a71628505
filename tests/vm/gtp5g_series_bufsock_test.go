package vm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/khirono/go-nl"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// listenBufferAt is listenBuffer on a given path.
func listenBufferAt(t *testing.T, path string) *bufferListener {
	t.Helper()
	b := &bufferListener{path: path}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatalf("buffering socket %s: %v", path, err)
	}
	b.conn = c
	go func() {
		buf := make([]byte, 65536)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			b.n.Add(1)
		}
	}()
	t.Cleanup(func() { _ = c.Close() })
	return b
}

// sleepingSocketPath returns the path of a socket to bind and a path to
// it whose lookup sleeps: through a symlink on the read-write 9p share,
// which the guest mounts without a cache, so every lookup of the link
// asks the host and waits for its answer. The socket itself is on tmpfs
// (the share does not take sockets).
func sleepingSocketPath(t *testing.T) (bind, connect string) {
	t.Helper()
	real := t.TempDir()
	link := filepath.Join(GuestWorkDir, fmt.Sprintf("kern-bufsock-%d", os.Getpid()))
	if err := os.Symlink(real, link); err != nil {
		t.Fatalf("symlink on the 9p share: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(link) })
	return filepath.Join(real, "buf.sock"), filepath.Join(link, "buf.sock")
}

// TestGtp5gSeriesBufferSocketCreate: a PDR's buffering socket is created
// and connected (both may sleep) outside the RCU read-side section the
// rule requests hold, by a PDR add, a FAR update and a QER update, and
// works; a path nothing listens on still refuses the PDR. The series
// created it inside the section. What this can see on Debian's kernels
// (no CONFIG_DEBUG_ATOMIC_SLEEP, no lockdep): CONFIG_PREEMPT_RCU's
// "Voluntary context switch within RCU read-side critical section!"
// warning, which needs the code to really sleep there; the path's lookup
// goes through an uncached 9p symlink so that connect() waits for the
// host. A sleep that never happens (a cached lookup, an allocation that
// finds memory) it cannot see.
func TestGtp5gSeriesBufferSocketCreate(t *testing.T) {
	requireSeriesFixes(t)
	kmsg, err := openKmsgTail()
	if err != nil {
		t.Fatal(err)
	}
	defer kmsg.close()
	bind, path := sleepingSocketPath(t)
	lis := listenBufferAt(t, bind)
	ns := gtp5gtest.In("gtpc1", testenv.NewNetNS(t))
	ns.AddLink(t, "gtpc1", gtp5gtest.RoleUPF)
	r := ns.DialRules(t, "gtpc1")
	ns.IP(t, "route", "add", "10.60.0.0/24", "dev", "gtpc1")
	buff := []nl.Attr{{Type: gtp5gnl.FAR_APPLY_ACTION, Value: nl.AttrU16(0x04)}} // BUFF
	r.AddFAR(t, 1, 1, buff)
	r.AddQER(t, 1, 1, gtp5gtest.QER{QFI: 9})
	pdrAttrs := func(path string) []nl.Attr {
		return append(gtp5gtest.PDR{Precedence: 10, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", FARID: 1,
			QERIDs: []uint32{1}}.Attrs(),
			nl.Attr{Type: gtp5gnl.PDR_UNIX_SOCKET_PATH, Value: nl.AttrBytes(append([]byte(path), 0))})
	}
	if err := gtp5gnl.CreatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), pdrAttrs(path)); err != nil {
		t.Fatalf("add a buffering PDR: %v", err)
	}
	sent := sendBuffered(t, ns, lis)
	// each of these replaces the socket
	steps := []struct {
		what string
		do   func() error
	}{
		{"FAR update", func() error { return gtp5gnl.UpdateFAROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), buff) }},
		{"QER update", func() error {
			return gtp5gnl.UpdateQEROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), gtp5gtest.QER{QFI: 9}.Attrs())
		}},
		{"PDR update", func() error {
			return gtp5gnl.UpdatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), pdrAttrs(path))
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := lis.n.Load(); !lis.waitBuffered(got, 5*time.Second) {
			t.Errorf("no buffered packet reached %s in 5 s after a %s", lis.path, s.what)
		}
	}
	// nothing listens there: refused as before, and not added
	gone := filepath.Join(filepath.Dir(path), "nobody.sock")
	if err := gtp5gnl.CreatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, 2), pdrAttrs(gone)); !errors.Is(err, unix.EINVAL) {
		t.Errorf("a PDR whose buffering socket cannot connect: %v, want EINVAL", err)
	}
	if _, err := gtp5gnl.GetPDROID(r.Client(), r.Link, gtp5gtest.OID(1, 2)); err == nil {
		t.Errorf("the refused PDR 2 is there")
	}
	if got := lis.n.Load(); !lis.waitBuffered(got, 5*time.Second) {
		t.Errorf("PDR 1 stopped buffering after the refused PDR 2")
	}
	lines, err := kmsg.lines()
	if err != nil {
		t.Fatal(err)
	}
	if bad := matching(lines, "Voluntary context switch within RCU", "sleeping function called from invalid context",
		"suspicious RCU usage", "scheduling while atomic"); len(bad) > 0 {
		t.Errorf("%d kernel lines of sleeping in atomic context, e.g. %q", len(bad), bad[0])
	}
	t.Logf("buffering socket %s (through %s): %d datagrams sent, %d buffered, %d kernel lines read", bind, path, sent.Load(), lis.n.Load(), len(lines))
}

// TestGtp5gSeriesBufferSocketAfterRuleDelete: a buffering PDR keeps its
// socket, and keeps buffering, when one of its QERs or URRs is deleted:
// whether it buffers is its FAR's business. The series released the
// socket on either delete, and the PDR dropped what it should buffer
// ("Failed Socket is NULL") until its FAR or itself was updated.
func TestGtp5gSeriesBufferSocketAfterRuleDelete(t *testing.T) {
	requireSeriesFixes(t)
	lis := listenBuffer(t)
	ns := gtp5gtest.In("gtpc2", testenv.NewNetNS(t))
	ns.AddLink(t, "gtpc2", gtp5gtest.RoleUPF)
	r := ns.DialRules(t, "gtpc2")
	ns.IP(t, "route", "add", "10.60.0.0/24", "dev", "gtpc2")
	r.AddFAR(t, 1, 1, []nl.Attr{{Type: gtp5gnl.FAR_APPLY_ACTION, Value: nl.AttrU16(0x04)}}) // BUFF
	r.AddQER(t, 1, 1, gtp5gtest.QER{QFI: 9})
	if err := gtp5gnl.CreateURROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), []nl.Attr{
		{Type: gtp5gnl.URR_MEASUREMENT_METHOD, Value: nl.AttrU8(2)}, // VOLUM
		{Type: gtp5gnl.URR_REPORTING_TRIGGER, Value: nl.AttrU32(0)},
	}); err != nil {
		t.Fatalf("add URR 1: %v", err)
	}
	pdr := append(gtp5gtest.PDR{Precedence: 10, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", FARID: 1,
		QERIDs: []uint32{1}}.Attrs(),
		nl.Attr{Type: gtp5gnl.PDR_URR_ID, Value: nl.AttrU32(1)},
		nl.Attr{Type: gtp5gnl.PDR_UNIX_SOCKET_PATH, Value: nl.AttrBytes(append([]byte(lis.path), 0))})
	if err := gtp5gnl.CreatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), pdr); err != nil {
		t.Fatalf("add a buffering PDR: %v", err)
	}
	sent := sendBuffered(t, ns, lis)
	r.Remove(t, "qer", 1, 1)
	if got := lis.n.Load(); !lis.waitBuffered(got, 5*time.Second) {
		t.Errorf("no buffered packet reached %s in 5 s after the PDR's QER was deleted", lis.path)
	}
	if _, err := gtp5gnl.RemoveURROID(r.Client(), r.Link, gtp5gtest.OID(1, 1)); err != nil {
		t.Fatalf("delete URR 1: %v", err)
	}
	if got := lis.n.Load(); !lis.waitBuffered(got, 5*time.Second) {
		t.Errorf("no buffered packet reached %s in 5 s after the PDR's URR was deleted", lis.path)
	}
	t.Logf("%d downlink datagrams sent, %d buffered", sent.Load(), lis.n.Load())
}

// sendBuffered sends downlink datagrams to 10.60.0.1 until the test ends
// and waits for the first to reach the buffering socket lis; it returns
// the count of datagrams sent.
func sendBuffered(t *testing.T, ns gtp5gtest.NS, lis *bufferListener) *atomic.Int64 {
	t.Helper()
	var sent atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	startSender(t, ns, &wg, stop, &sent, "10.60.0.1:9", make([]byte, 200))
	t.Cleanup(func() { close(stop); wg.Wait() })
	if !lis.waitBuffered(0, 5*time.Second) {
		t.Fatalf("no buffered packet reached %s in 5 s", lis.path)
	}
	return &sent
}
