package vm

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/khirono/go-nl"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// What the datapath reads under RCU alone while rule requests replace
// it: a QER's native policers and a PDR's buffering socket. Without KASAN
// a policer written after its kfree() rarely shows, so the policer test
// judges the leak of replaced policers by the slab, and runs its churn
// for the kernel errors it may provoke: TestVMGtp5gLifetime boots with
// poisoned kmalloc-64 and kmalloc-96 caches, which report such a write.
// The socket test's verdict is the oops of a send on a socket being
// released.

// TestVMGtp5gLifetime boots the Debian kernel with $GTP5G_KO loaded and
// runs only this file's guest tests (TestVMGtp5gSeries runs them with the
// rest of the series).
func TestVMGtp5gLifetime(t *testing.T) {
	// poisoned, checked policers (64 bytes in stock, 80 with the fix): a
	// write after kfree() is reported on the next allocation
	runSeriesSlice(t, "lifetime", "PolicerLifetime|BufferSocketRelease", "kmalloc-64,kmalloc-96")
}

// runSeriesSlice boots the Debian kernel with $GTP5G_KO loaded and
// poisoned, checked slab caches and runs the guest tests
// TestGtp5gSeries(<tests>) only; what names the slice in messages.
func runSeriesSlice(t *testing.T, what, tests, caches string) {
	t.Helper()
	if os.Getenv("GTPQOS_IN_VM") == "1" {
		t.Skip("host-side launcher; inside the VM the guest tests run")
	}
	ko := RequireKO(t)
	bin := BuildTestBinary(t, "./tests/vm/")
	name := "gtp5g_" + what + ".test"
	res := Run(t, Config{
		Script: bin.Script(name, "-test.run", "^TestGtp5gSeries("+tests+")$", "-test.v",
			"-test.count=1", "-test.timeout", "7m") + "\n",
		Env:        map[string]string{gtp5gGuestEnv: "1"},
		Files:      map[string]string{name: bin.HostPath},
		KO:         ko,
		Timeout:    9 * time.Minute,
		KernelArgs: []string{"slub_debug=FZP," + caches},
	})
	if res.ExitCode != 0 || strings.Contains(res.Output, "--- FAIL") {
		t.Fatalf("guest %s tests failed (exit %d); see the guest: lines above", what, res.ExitCode)
	}
	if !strings.Contains(res.Output, "--- PASS") {
		t.Fatalf("no guest %s test passed", what)
	}
}

// kmallocObjects returns the active objects of the kmalloc-* slab caches
// (/proc/slabinfo). Objects, not bytes: slub_debug grows each object.
func kmallocObjects() (int64, error) {
	f, err := os.Open("/proc/slabinfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 4 || !strings.HasPrefix(fl[0], "kmalloc-") ||
			strings.HasPrefix(fl[0], "kmalloc-cg-") || strings.HasPrefix(fl[0], "kmalloc-rcl-") {
			continue
		}
		active, err := strconv.ParseInt(fl[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/slabinfo line %q", sc.Text())
		}
		total += active
	}
	return total, sc.Err()
}

// enablePolicer switches gtp5g's native policer on until the test ends.
func enablePolicer(t *testing.T) {
	t.Helper()
	if err := writeProcErr("qos", "1"); err != nil {
		t.Fatalf("switch the native policer on: %v", err)
	}
	t.Cleanup(func() { _ = writeProcErr("qos", "0") })
}

// TestGtp5gSeriesPolicerLifetime: QER updates replace the QER's
// policers, deletes free them, while the policer polices traffic. Stock
// gtp5g leaked both policers on every update with an MBR and kfree()d
// them on a delete while a packet could be policed with them.
func TestGtp5gSeriesPolicerLifetime(t *testing.T) {
	requireSeriesFixes(t)
	const (
		updates = 4000
		rounds  = 1500
	)
	enablePolicer(t)
	ns, link := trafficDevice(t)
	r := ns.DialRules(t, "gtpt1")
	q := func(i int) gtp5gtest.QER {
		return gtp5gtest.QER{QFI: 2, GBRKbps: 15000, MBRKbps: uint64(18000 + i%1000)}
	}

	// The leak, without traffic: two policers per update.
	before, err := kmallocObjects()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < updates; i++ {
		r.UpdateQER(t, 1, 1, q(i))
	}
	time.Sleep(2 * time.Second) // kfree_rcu() batches, then a grace period
	after, err := kmallocObjects()
	if err != nil {
		t.Fatal(err)
	}
	leak := int64(updates) * 2
	if grew := after - before; grew > leak/4 {
		t.Errorf("%d QER updates grew the kmalloc caches by %d objects (two leaked policers each would be %d)",
			updates, grew, leak)
	} else {
		t.Logf("%d QER updates: kmalloc caches grew by %d objects (a leak of both policers would be %d)", updates, grew, leak)
	}

	// The churn, under traffic in both directions.
	kmsg, err := openKmsgTail()
	if err != nil {
		t.Fatal(err)
	}
	defer kmsg.close()
	var sent atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for j := 0; j < 2; j++ {
		startSender(t, ns, &wg, stop, &sent, "10.60.0.1:9", make([]byte, 200))
		startSender(t, ns, &wg, stop, &sent, "127.0.0.1:2152",
			gtpuPacket(100, net.IPv4(10, 60, 0, 1), net.IPv4(10, 200, 0, 2), 200))
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(50 * time.Millisecond)
	var rx, tx uint64
	if err := ns.Do(func() (err error) { rx, tx, err = deviceBytes("gtpt1"); return err }); err != nil {
		t.Fatal(err)
	}
	if rx == 0 || tx == 0 {
		t.Fatalf("gtpt1 received %d and sent %d bytes: the traffic does not reach it", rx, tx)
	}
	pdrs := []gtp5gtest.PDR{
		{Precedence: 10, SrcIntf: gtp5gtest.SrcAccess, FTEID: 100, FTEIDAddr: "127.0.0.1", OHR: true, FARID: 1, QERIDs: []uint32{1}},
		{Precedence: 10, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", FARID: 2, QERIDs: []uint32{1}},
	}
	for i := 0; i < rounds; i++ {
		if i%5 != 4 {
			r.UpdateQER(t, 1, 1, q(i))
			continue
		}
		// delete and re-create the QER; the PDRs take its new policers
		r.Remove(t, "qer", 1, 1)
		r.AddQER(t, 1, 1, q(i))
		for id, p := range pdrs {
			if err := gtp5gnl.UpdatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, id+1), p.Attrs()); err != nil {
				t.Fatalf("round %d: update PDR %d: %v", i, id+1, err)
			}
		}
	}
	lines, err := kmsg.lines()
	if err != nil {
		t.Fatal(err)
	}
	if bad := matching(lines, "Poison overwritten", "Object already free", "Redzone overwritten", "Freepointer corrupt"); len(bad) > 0 {
		t.Errorf("%d slab corruption lines, e.g. %q", len(bad), bad[0])
	}
	t.Logf("%d rounds of QER updates, and deletes and re-creations every fifth, under traffic through link %d: "+
		"%d datagrams sent, %d kernel lines read", rounds, link, sent.Load(), len(lines))
}

// bufferListener is a unix datagram socket gtp5g sends buffered packets
// to, counting what arrives.
type bufferListener struct {
	path string
	conn *net.UnixConn
	n    atomic.Int64
}

func listenBuffer(t *testing.T) *bufferListener {
	t.Helper()
	return listenBufferAt(t, filepath.Join(t.TempDir(), "buf.sock"))
}

// waitBuffered waits until the listener has more than n datagrams.
func (b *bufferListener) waitBuffered(n int64, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if b.n.Load() > n {
			return true
		}
	}
	return false
}

// TestGtp5gSeriesBufferSocketRelease: a PDR buffers downlink packets on
// its unix socket while FAR updates replace the socket and PDR deletes
// drop it. Stock gtp5g released the socket at once while the datapath
// could be sending on it (an oops in unix_dgram_sendmsg or a NULL
// sock->ops), and released a deleted PDR's socket from its RCU callback,
// in softirq, where sock_release() may not sleep (without
// CONFIG_DEBUG_ATOMIC_SLEEP that shows only if it does sleep).
func TestGtp5gSeriesBufferSocketRelease(t *testing.T) {
	requireSeriesFixes(t)
	const rounds = 1500
	lis := listenBuffer(t)
	ns := gtp5gtest.In("gtpb1", testenv.NewNetNS(t))
	ns.AddLink(t, "gtpb1", gtp5gtest.RoleUPF)
	r := ns.DialRules(t, "gtpb1")
	ns.IP(t, "route", "add", "10.60.0.0/24", "dev", "gtpb1")
	buff := []nl.Attr{{Type: gtp5gnl.FAR_APPLY_ACTION, Value: nl.AttrU16(0x04)}} // BUFF
	r.AddFAR(t, 1, 1, buff)
	pdr := append(gtp5gtest.PDR{Precedence: 10, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", FARID: 1}.Attrs(),
		nl.Attr{Type: gtp5gnl.PDR_UNIX_SOCKET_PATH, Value: nl.AttrBytes(append([]byte(lis.path), 0))})
	addPDR := func() error { return gtp5gnl.CreatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), pdr) }
	if err := addPDR(); err != nil {
		t.Fatalf("add a buffering PDR: %v", err)
	}
	var sent atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for j := 0; j < 2; j++ {
		startSender(t, ns, &wg, stop, &sent, "10.60.0.1:9", make([]byte, 200))
	}
	defer func() { close(stop); wg.Wait() }()
	if !lis.waitBuffered(0, 5*time.Second) {
		t.Fatalf("no buffered packet reached %s in 5 s", lis.path)
	}
	deletes := 0
	for i := 0; i < rounds; i++ {
		if i%20 == 19 {
			r.Remove(t, "pdr", 1, 1)
			if err := addPDR(); err != nil {
				t.Fatalf("round %d: add the PDR again: %v", i, err)
			}
			deletes++
			continue
		}
		if err := gtp5gnl.UpdateFAROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), buff); err != nil {
			t.Fatalf("round %d: update FAR: %v", i, err)
		}
	}
	got := lis.n.Load()
	if !lis.waitBuffered(got, 5*time.Second) {
		t.Errorf("no buffered packet reached %s after the churn", lis.path)
	}
	t.Logf("%d FAR updates and %d PDR re-creations, each replacing the buffering socket, under %d downlink datagrams: "+
		"%d buffered", rounds-deletes, deletes, sent.Load(), lis.n.Load())
}
