package vm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/mdlayher/genetlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// Stock gtp5g v0.10.2 defects the series fixes, one guest test each.
// On a module without the fix each of them fails (or the kernel error it
// provokes fails the VM test).

// requireSeriesFixes skips on a stock gtp5g and on the series' first
// revision: these tests judge the series.
func requireSeriesFixes(t *testing.T) seriesABI {
	t.Helper()
	abi := requireSeries(t)
	if abi.legacy {
		t.Skip("the series' first revision")
	}
	return abi
}

// asThread runs f on a locked OS thread that never runs other goroutines
// again (it ends with the goroutine), after drop changed its credentials.
func asThread(drop func() error, f func() error) error {
	res := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := drop(); err != nil {
			res <- fmt.Errorf("drop privileges: %w", err)
			return
		}
		res <- f()
	}()
	return <-res
}

// nobody makes the calling thread uid/gid 65534 with no capabilities.
func nobody() error {
	for _, sc := range [][4]uintptr{
		{unix.SYS_SETGROUPS, 0, 0, 0},
		{unix.SYS_SETRESGID, 65534, 65534, 65534},
		{unix.SYS_SETRESUID, 65534, 65534, 65534},
	} {
		if _, _, errno := unix.RawSyscall(sc[0], sc[1], sc[2], sc[3]); errno != 0 {
			return fmt.Errorf("syscall %d: %w", sc[0], errno)
		}
	}
	return nil
}

// rootWithoutCaps keeps uid 0 and drops every capability of the thread.
func rootWithoutCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{}
	return unix.Capset(&hdr, &data[0])
}

func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(s)
	return err
}

// TestGtp5gSeriesProcWrites: /proc/gtp5g's files are not writable by
// other users, a write needs CAP_NET_ADMIN even as uid 0, and bad input
// is refused with EINVAL (stock: 0666, and "bogus" written to qos oopsed
// the kernel; a long device name overflowed a stack buffer).
func TestGtp5gSeriesProcWrites(t *testing.T) {
	requireSeriesFixes(t)
	seriesDevice(t, "gtpp1")
	files := []string{"dbg", "far", "pdr", "qer", "qos", "seq", "urr", "qos_mark"}
	for _, f := range files {
		st, err := os.Stat("/proc/gtp5g/" + f)
		if err != nil {
			t.Fatalf("/proc/gtp5g/%s: %v", f, err)
		}
		if st.Mode().Perm()&0o022 != 0 {
			t.Errorf("/proc/gtp5g/%s is %v: group and others may write it", f, st.Mode().Perm())
		}
	}
	for _, w := range []struct{ file, data string }{
		{"qos", "bogus\n"}, {"dbg", "bogus\n"}, {"seq", "x\n"}, {"dbg", "9\n"},
		{"pdr", strings.Repeat("A", 100) + " 1 1\n"}, {"far", strings.Repeat("B", 100) + " 1 1\n"},
		{"qer", strings.Repeat("C", 100) + " 1 1\n"}, {"urr", strings.Repeat("D", 100) + " 1 1\n"},
		{"pdr", "nosuchdev 1 1\n"},
	} {
		err := writeFile("/proc/gtp5g/"+w.file, w.data)
		if !errors.Is(err, unix.EINVAL) {
			t.Errorf("root writing %.20q to /proc/gtp5g/%s: %v, want EINVAL", w.data, w.file, err)
		}
	}
	if got := readProc(t, "qos"); got != "QoS Enable: 0\n" {
		t.Errorf("/proc/gtp5g/qos after the refused writes: %q", got)
	}
	for _, f := range files {
		err := asThread(rootWithoutCaps, func() error { return writeFile("/proc/gtp5g/"+f, "1\n") })
		if !errors.Is(err, unix.EPERM) {
			t.Errorf("uid 0 without capabilities writing /proc/gtp5g/%s: %v, want EPERM", f, err)
		}
		err = asThread(nobody, func() error { return writeFile("/proc/gtp5g/"+f, "1\n") })
		if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
			t.Errorf("uid 65534 writing /proc/gtp5g/%s: %v, want EACCES", f, err)
		}
	}
	if got := readProc(t, "qos"); got != "QoS Enable: 0\n" {
		t.Errorf("/proc/gtp5g/qos after unprivileged writes: %q, want the policer still off", got)
	}
	if got := readProc(t, "qos_mark"); got != "off\n" {
		t.Errorf("/proc/gtp5g/qos_mark after unprivileged writes: %q, want off", got)
	}
}

// TestGtp5gSeriesNewlinkFailure: a device whose registration fails (a
// name with a '/') is refused and leaves nothing behind; stock freed its
// tables twice (a general protection fault).
func TestGtp5gSeriesNewlinkFailure(t *testing.T) {
	requireSeriesFixes(t)
	ns := gtp5gtest.In("gtpn1", testenv.NewNetNS(t))
	for i := 0; i < 3; i++ {
		err := ns.Do(func() error {
			conn, err := net.ListenUDP("udp4", &net.UDPAddr{Port: 2152})
			if err != nil {
				return err
			}
			defer conn.Close()
			f, err := conn.File()
			if err != nil {
				return err
			}
			defer f.Close()
			return gtp5gtest.CreateLink("a/b", int(f.Fd()), gtp5gtest.RoleUPF)
		})
		if err == nil {
			t.Fatal("a gtp5g device named a/b was created")
		}
		t.Logf("device a/b, attempt %d: %v", i+1, err)
	}
	ns.AddLink(t, "gtpn1", gtp5gtest.RoleUPF) // the port and the module still work
}

// TestGtp5gSeriesNetnsLocal: a gtp5g device cannot move to another
// namespace (stock let it, and its dumps and events then disagreed).
func TestGtp5gSeriesNetnsLocal(t *testing.T) {
	requireSeriesFixes(t)
	ns, _ := seriesDevice(t, "gtpm1")
	other := testenv.NewNetNS(t)
	out, err := ns.TryIP("link", "set", "gtpm1", "netns", other.Name)
	if err == nil {
		t.Fatalf("ip link set gtpm1 netns %s succeeded: the device left its namespace (%s)", other.Name, out)
	}
	t.Logf("move refused: %v %s", err, strings.TrimSpace(out))
	if _, err := ns.TryIP("link", "show", "gtpm1"); err != nil {
		t.Errorf("gtpm1 is gone from its namespace after the refused move: %v", err)
	}
}

// TestGtp5gSeriesStockGroup: joining the gtp5g family's own group needs
// CAP_NET_ADMIN; stock let any local user read buffered packets and usage
// reports.
func TestGtp5gSeriesStockGroup(t *testing.T) {
	requireSeriesFixes(t)
	c, err := genetlink.Dial(nil)
	if err != nil {
		t.Fatalf("generic netlink: %v", err)
	}
	f, err := c.GetFamily("gtp5g")
	c.Close()
	if err != nil {
		t.Fatalf("family gtp5g: %v", err)
	}
	var group uint32
	for _, g := range f.Groups {
		if g.Name == "gtp5g" {
			group = g.ID
		}
	}
	if group == 0 {
		t.Fatal("family gtp5g has no gtp5g group")
	}
	join := func() error {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return err
		}
		return unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_ADD_MEMBERSHIP, int(group))
	}
	if err := join(); err != nil {
		t.Fatalf("root joining the gtp5g group: %v", err)
	}
	if err := asThread(nobody, join); !errors.Is(err, unix.EPERM) {
		t.Errorf("uid 65534 joining the gtp5g group: %v, want EPERM", err)
	}
}

// TestGtp5gSeriesQFIModeAfterQERDelete: in mode qfi a PDR stops writing
// its QFI once the QER it took the QFI from is deleted (the series' mode
// qfi kept marking with the deleted QER's QFI).
func TestGtp5gSeriesQFIModeAfterQERDelete(t *testing.T) {
	requireSeriesFixes(t)
	setMarkModeProc(t, "qfi")
	l := newGtp5gLab(t)
	l.programRAN(t)
	l.upf.AddQER(t, 1, 1, flowA) // QFI 2
	l.upf.AddFAR(t, 1, 1, gtp5gtest.FARForward(100, "10.100.0.2"))
	l.upf.AddPDR(t, 1, 1, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.2", FARID: 1, QERIDs: []uint32{1}})
	observe := []uint32{2}
	if got := marksOnN3(t, "QFI 2, QER present", observe, markFieldMask, l.sA, l.ueA, pktsA); got[2] != pktsA {
		t.Fatalf("before the delete flow A left N3 with marks %v; want all %d with QFI 2", got, pktsA)
	}
	l.upf.Remove(t, "qer", 1, 1)
	if got := marksOnN3(t, "QFI 2, QER deleted", observe, markFieldMask, l.sA, l.ueA, pktsA); len(got) != 0 {
		t.Errorf("after its QER was deleted flow A still leaves N3 with marks %v; want none", got)
	}
}

// TestGtp5gSeriesFARIDChangeStress: a PDR whose update changes its FAR
// id, then is deleted, must leave no pointer in the old FAR's bucket:
// deleting the old FAR, dumping FARs and FAR events read through it
// (stock left the node there). A stress loop with an event listener; the
// VM test fails on any kernel error it provokes.
func TestGtp5gSeriesFARIDChangeStress(t *testing.T) {
	abi := requireSeriesFixes(t)
	ns, r := seriesDevice(t, "gtpr1")
	events := listenEvents(t, ns, abi)
	pdr := func(far uint32) gtp5gtest.PDR {
		return gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", FARID: far}
	}
	const rounds = 150
	failures := 0
	for i := 0; i < rounds; i++ {
		r.AddFAR(t, 1, 1, gtp5gtest.FARForward(100, "10.100.0.2"))
		r.AddFAR(t, 1, 2, gtp5gtest.FARForward(101, "10.100.0.2"))
		r.AddPDR(t, 1, 1, pdr(1))
		if err := gtp5gnl.UpdatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), pdr(2).Attrs()); err != nil {
			t.Fatalf("round %d: change the PDR's FAR id to 2: %v", i, err)
		}
		r.Remove(t, "pdr", 1, 1)
		if i%10 == 0 {
			time.Sleep(50 * time.Millisecond) // let the PDR's grace period pass
		}
		// FAR 1 updated then deleted: both walk its bucket of PDRs
		if err := gtp5gnl.UpdateFAROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), gtp5gtest.FARForward(102, "10.100.0.2")); err != nil {
			failures++
		}
		if _, err := gtp5gnl.GetFAROID(r.Client(), r.Link, gtp5gtest.OID(1, 1)); err != nil {
			failures++
		}
		r.Remove(t, "far", 1, 1)
		r.Remove(t, "far", 1, 2)
	}
	got := events.collect(time.Second)
	t.Logf("%d rounds of PDR FAR-id change, delete, FAR update, get and delete: %d failed requests, %d events", rounds, failures, len(got))
	if failures != 0 {
		t.Errorf("%d requests on the old FAR failed", failures)
	}
}
