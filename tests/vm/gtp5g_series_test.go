package vm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/khirono/go-nl"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nlenc"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// The gtp5g-patch series' guarantees: one guest test per property the
// series' first revision lacked, each run on the real module inside the VM.
// They also run against a module built with that first revision (whose
// additions live inside the gtp5g family), where each shows its defect;
// on a stock gtp5g they skip, except TestGtp5gSeriesStockFamily, which
// compares the gtp5g family with the recording of a stock v0.10.2.

// TestVMGtp5gSeries boots the Debian kernel with $GTP5G_KO loaded and runs
// the TestGtp5gSeries* guest tests in one boot. With
// GTPQOS_RECORD_GTP5G_GENL=1 and a stock gtp5g.ko it rewrites the
// recording of the gtp5g family (testdata/gtp5g-v0.10.2-genl.json).
func TestVMGtp5gSeries(t *testing.T) {
	if os.Getenv("GTPQOS_IN_VM") == "1" {
		t.Skip("host-side launcher; inside the VM the TestGtp5gSeries* tests run")
	}
	ko := RequireKO(t)
	bin := BuildTestBinary(t, "./tests/vm/")
	const name = "gtp5g_series.test"
	env := map[string]string{gtp5gGuestEnv: "1", guestKOEnv: GuestWorkDir + "/.vm/" + filepath.Base(ko)}
	record := os.Getenv(recordGenlEnv) == "1"
	if record {
		env[recordGenlEnv] = "1"
	}
	res := Run(t, Config{
		Script: bin.Script(name, "-test.run", "^TestGtp5gSeries", "-test.v", "-test.count=1",
			"-test.timeout", "14m") + "\n",
		Env:     env,
		Files:   map[string]string{name: bin.HostPath},
		KO:      ko,
		Timeout: 16 * time.Minute,
	})
	var passed, failed, skipped []string
	for _, l := range strings.Split(res.Output, "\n") {
		if m := goTestLineRE.FindStringSubmatch(l); m != nil && !strings.Contains(m[2], "/") {
			switch m[1] {
			case "PASS":
				passed = append(passed, m[2])
			case "FAIL":
				failed = append(failed, m[2])
			case "SKIP":
				skipped = append(skipped, m[2])
			}
		}
	}
	t.Logf("series tests in the VM: passed %v, failed %v, skipped %v", passed, failed, skipped)
	if record {
		b, err := os.ReadFile(res.WorkDir + "/" + genlRecordingFile)
		if err != nil {
			t.Fatalf("recording: %v", err)
		}
		if err := os.WriteFile("testdata/"+genlRecordingFile, b, 0o644); err != nil {
			t.Fatalf("recording: %v", err)
		}
		t.Logf("wrote testdata/%s", genlRecordingFile)
	}
	if res.ExitCode != 0 || len(failed) > 0 {
		t.Fatalf("guest series tests failed (exit %d): %v; see the guest: lines above", res.ExitCode, failed)
	}
	if len(passed) == 0 {
		t.Fatal("no guest series test passed")
	}
}

// seriesABI is where the loaded module keeps what the series adds: the
// gtp5g_qos family (this series), or numbers appended to the gtp5g family
// (its first revision, tested to show each defect).
type seriesABI struct {
	legacy     bool
	family     genetlink.Family // holds the series' commands and event group
	group      uint32           // the event group's id
	eventCmd   uint8
	opAttr     uint16 // event operation (u8)
	nestPDR    uint16 // event nests in gtp5g's attribute numbers
	nestFAR    uint16
	nestQER    uint16
	setMark    uint8
	markAttr   uint16
	setPolicer uint8
	polAttr    uint16
}

// requireSeries returns the loaded module's series ABI and skips on a
// stock gtp5g.
func requireSeries(t *testing.T) seriesABI {
	t.Helper()
	requireGtp5gGuest(t)
	c, err := genetlink.Dial(nil)
	if err != nil {
		t.Fatalf("generic netlink: %v", err)
	}
	defer c.Close()
	group := func(f genetlink.Family, name string) (uint32, bool) {
		for _, g := range f.Groups {
			if g.Name == name {
				return g.ID, true
			}
		}
		return 0, false
	}
	if f, err := c.GetFamily("gtp5g_qos"); err == nil {
		id, ok := group(f, "events")
		if !ok {
			t.Fatalf("family gtp5g_qos has no events group (kernel without GENL_MCAST_CAP_NET_ADMIN?)")
		}
		return seriesABI{family: f, group: id, eventCmd: 8, opAttr: 13, nestPDR: 17, nestFAR: 18, nestQER: 19,
			setMark: 3, markAttr: 3, setPolicer: 5, polAttr: 6}
	}
	f, err := c.GetFamily("gtp5g")
	if err != nil {
		t.Fatalf("family gtp5g: %v", err)
	}
	if id, ok := group(f, "gtp5g_qos"); ok {
		t.Log("module with the series' first revision (its additions inside the gtp5g family)")
		return seriesABI{legacy: true, family: f, group: id, eventCmd: 23, opAttr: 6, nestPDR: 9, nestFAR: 10, nestQER: 11,
			setMark: 22, markAttr: 3, setPolicer: 25, polAttr: 12}
	}
	t.Skip("stock gtp5g: the series is not applied")
	return seriesABI{}
}

// seriesEvent is one event message as the tests look at it.
type seriesEvent struct {
	op   uint8
	nest uint16 // which rule nest (abi.nestPDR, ...); 0: none
	rule []byte // the nest's payload: gtp5g's GET attributes of the rule
	size int    // the whole message payload
}

// rawEvents is an event listener on the series' group, reading into a
// channel; errors (ENOBUFS) come through it too.
type rawEvents struct {
	abi seriesABI
	ch  chan rawEvent
}

type rawEvent struct {
	ev  seriesEvent
	err error
}

// listenEvents joins the event group from inside ns and reads until the
// test ends.
func listenEvents(t *testing.T, ns gtp5gtest.NS, abi seriesABI) *rawEvents {
	t.Helper()
	var c *genetlink.Conn
	if err := ns.Do(func() (err error) { c, err = genetlink.Dial(nil); return err }); err != nil {
		t.Fatalf("netns %s: generic netlink: %v", ns.Name, err)
	}
	_ = c.SetReadBuffer(8 << 20)
	if err := c.JoinGroup(abi.group); err != nil {
		_ = c.Close()
		t.Fatalf("join the event group as root: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); _ = c.Close() })
	r := &rawEvents{abi: abi, ch: make(chan rawEvent, 1024)}
	go func() {
		for {
			msgs, _, err := c.Receive()
			select {
			case <-done:
				return
			default:
			}
			if err != nil {
				r.ch <- rawEvent{err: err}
				if errors.Is(err, unix.ENOBUFS) {
					continue
				}
				return
			}
			for _, m := range msgs {
				if m.Header.Command == abi.eventCmd {
					r.ch <- rawEvent{ev: abi.decode(m)}
				}
			}
		}
	}()
	return r
}

// decode picks an event message apart in abi's numbers.
func (abi seriesABI) decode(m genetlink.Message) seriesEvent {
	ev := seriesEvent{size: len(m.Data)}
	ad, err := netlink.NewAttributeDecoder(m.Data)
	if err != nil {
		return ev
	}
	for ad.Next() {
		switch t := ad.Type(); t {
		case abi.opAttr:
			ev.op = ad.Uint8()
		case abi.nestPDR, abi.nestFAR, abi.nestQER:
			ev.nest, ev.rule = t, ad.Bytes()
		}
	}
	return ev
}

// collect returns what arrives within d.
func (r *rawEvents) collect(d time.Duration) []rawEvent {
	var out []rawEvent
	deadline := time.After(d)
	for {
		select {
		case e := <-r.ch:
			out = append(out, e)
		case <-deadline:
			return out
		}
	}
}

// seriesDevice makes a gtp5g device in a fresh namespace and a go-gtp5gnl
// client on it.
func seriesDevice(t *testing.T, name string) (gtp5gtest.NS, *gtp5gtest.Rules) {
	t.Helper()
	ns := gtp5gtest.In(name, testenv.NewNetNS(t))
	ns.AddLink(t, name, gtp5gtest.RoleUPF)
	return ns, ns.DialRules(t, name)
}

// attrsOf returns the attribute types and payloads of b, in order.
func attrsOf(b []byte) map[uint16][]byte {
	m := map[uint16][]byte{}
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return m
	}
	for ad.Next() {
		m[ad.Type()] = ad.Bytes()
	}
	return m
}

// forwardingPolicy returns the FORWARDING_POLICY in a FAR nest (nil: none).
func forwardingPolicy(far []byte) []byte {
	fp := attrsOf(far)[gtp5gnl.FAR_FORWARDING_PARAMETER]
	if fp == nil {
		return nil
	}
	return attrsOf(fp)[gtp5gnl.FORWARDING_PARAMETER_FORWARDING_POLICY]
}

// farAttrs are a forwarding FAR's attributes with an outer header toward
// peer and, unless empty, a forwarding policy.
func farAttrs(teid uint32, peer, policy string) []nl.Attr {
	attrs := gtp5gtest.FARForward(teid, peer)
	if policy == "" {
		return attrs
	}
	fp := nl.Attr{Type: gtp5gnl.FORWARDING_PARAMETER_FORWARDING_POLICY, Value: nl.AttrBytes(policy)}
	for i := range attrs {
		if attrs[i].Type == gtp5gnl.FAR_FORWARDING_PARAMETER {
			attrs[i].Value = append(attrs[i].Value.(nl.AttrList), fp)
			return attrs
		}
	}
	return append(attrs, nl.Attr{Type: gtp5gnl.FAR_FORWARDING_PARAMETER, Value: nl.AttrList{fp}})
}

// TestGtp5gSeriesFailedFARUpdate: an update whose forwarding policy is too long fails, gtp5g
// drops the FAR, and the delete must not read the half-updated FAR: the
// first revision announced it with a 300-byte policy copied out of a
// 256-byte buffer (kernel heap sent to listeners).
func TestGtp5gSeriesFailedFARUpdate(t *testing.T) {
	abi := requireSeries(t)
	ns, r := seriesDevice(t, "gtpf1")
	r.AddFAR(t, 1, 1, farAttrs(100, "10.100.0.2", "7"))
	events := listenEvents(t, ns, abi)
	long := strings.Repeat("9", 300)
	err := gtp5gnl.UpdateFAROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), farAttrs(0, "", long))
	if err == nil {
		t.Fatal("an update with a 300-byte forwarding policy was accepted")
	}
	t.Logf("update with a 300-byte forwarding policy: %v", err)
	dels := 0
	for _, e := range events.collect(2 * time.Second) {
		if e.err != nil {
			t.Fatalf("listener: %v", e.err)
		}
		ev := e.ev
		if p := forwardingPolicy(ev.rule); len(p) > 255 {
			t.Errorf("event op %d (%d bytes) carries a %d-byte forwarding policy, %d bytes past the FAR's 256-byte identifier: kernel memory sent to listeners",
				ev.op, ev.size, len(p), len(p)-256)
		}
		if ev.op == 3 {
			dels++
			if !abi.legacy && ev.rule != nil {
				t.Errorf("the delete of a FAR dropped after a failed update carries its half-updated state (%d bytes); want its ids alone", len(ev.rule))
			}
		}
	}
	if dels != 1 {
		t.Errorf("%d delete events after the failed update (gtp5g drops the FAR); want 1", dels)
	}
}

// TestGtp5gSeriesUnprivilegedListener: joining the event group needs CAP_NET_ADMIN. A thread that is
// uid/gid 65534 with no capabilities must not join (the first revision let
// any local user read every subscriber's rules); root still may.
func TestGtp5gSeriesUnprivilegedListener(t *testing.T) {
	abi := requireSeries(t)
	ns, r := seriesDevice(t, "gtpf2")
	root := listenEvents(t, ns, abi) // control: CAP_NET_ADMIN joins

	type joinResult struct {
		creds      string
		setsockopt error
		bind       error
		events     int
		err        error
	}
	res := make(chan joinResult, 1)
	added := make(chan struct{})
	go func() {
		// The thread is never unlocked: it ends with the goroutine, so
		// its dropped credentials never run other goroutines.
		runtime.LockOSThread()
		var out joinResult
		defer func() { res <- out }()
		if err := unix.Setns(int(ns.NetNS.Handle), unix.CLONE_NEWNET); err != nil {
			out.err = fmt.Errorf("setns: %w", err)
			return
		}
		for _, sc := range [][4]uintptr{
			{unix.SYS_SETGROUPS, 0, 0, 0},
			{unix.SYS_SETRESGID, 65534, 65534, 65534},
			{unix.SYS_SETRESUID, 65534, 65534, 65534},
		} {
			if _, _, errno := unix.RawSyscall(sc[0], sc[1], sc[2], sc[3]); errno != 0 {
				out.err = fmt.Errorf("drop privileges (syscall %d): %w", sc[0], errno)
				return
			}
		}
		status, _ := os.ReadFile("/proc/thread-self/status")
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "Uid:") || strings.HasPrefix(l, "CapEff:") {
				out.creds += strings.Join(strings.Fields(l), " ") + "; "
			}
		}
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
		if err != nil {
			out.err = fmt.Errorf("socket: %w", err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			out.err = fmt.Errorf("bind: %w", err)
			return
		}
		out.setsockopt = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_ADD_MEMBERSHIP, int(abi.group))
		if abi.group <= 32 {
			fd2, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
			if err == nil {
				out.bind = unix.Bind(fd2, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (abi.group - 1)})
				unix.Close(fd2)
			}
		}
		if out.setsockopt != nil {
			return
		}
		// Joined: see what a local user gets.
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 3})
		<-added
		buf := make([]byte, 65536)
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil || n <= 0 {
				return
			}
			out.events++
		}
	}()
	time.Sleep(200 * time.Millisecond)
	r.AddQER(t, 7, 1, gtp5gtest.QER{QFI: 2, GBRKbps: 1000, MBRKbps: 2000})
	close(added)
	out := <-res
	if out.err != nil {
		t.Fatalf("unprivileged thread: %v", out.err)
	}
	t.Logf("unprivileged thread (%s): NETLINK_ADD_MEMBERSHIP: %v; bind to the group: %v", strings.TrimSuffix(out.creds, "; "), out.setsockopt, out.bind)
	if !strings.Contains(out.creds, "CapEff: 0000000000000000") {
		t.Fatalf("the thread kept capabilities (%s): the check would prove nothing", out.creds)
	}
	if !errors.Is(out.setsockopt, unix.EPERM) {
		t.Errorf("an unprivileged socket joined the event group (err %v) and received %d events of subscribers' rules; want EPERM", out.setsockopt, out.events)
	}
	if abi.group <= 32 && !errors.Is(out.bind, unix.EPERM) {
		t.Errorf("an unprivileged socket bound to the event group (err %v); want EPERM", out.bind)
	}
	got := 0
	for _, e := range root.collect(time.Second) {
		if e.err == nil && e.ev.op == 1 {
			got++
		}
	}
	if got != 1 {
		t.Errorf("root's listener got %d add events, want 1", got)
	}
}

// TestGtp5gSeriesStockFamily: the gtp5g family is stock on the wire. Its
// description (version, header, maxattr, ops with their flags, multicast
// groups), its attribute policies, GET_VERSION's replies and the dumps of
// a fixed rule set must equal what a stock v0.10.2 gives; that was
// recorded from a stock build into testdata.
func TestGtp5gSeriesStockFamily(t *testing.T) {
	requireGtp5gGuest(t)
	got := recordGtp5gGenl(t)
	if os.Getenv(recordGenlEnv) == "1" {
		if got.qos {
			t.Fatal("recording needs a stock gtp5g.ko (this one has the series)")
		}
		b, err := got.rec.marshal()
		if err != nil {
			t.Fatal(err)
		}
		work := os.Getenv("VM_WORK")
		if work == "" {
			work = "/run/vm"
		}
		if err := os.WriteFile(work+"/"+genlRecordingFile, b, 0o644); err != nil {
			t.Fatalf("write the recording: %v", err)
		}
		t.Logf("recorded the stock gtp5g family (%d ops)", len(got.rec.Family.Ops))
		return
	}
	want, err := loadGenlRecording("testdata/" + genlRecordingFile)
	if err != nil {
		t.Fatalf("recording of stock v0.10.2: %v", err)
	}
	if d := diffGenlRecording(want, got.rec); d != "" {
		t.Errorf("the gtp5g family differs from stock v0.10.2's (-stock +loaded):\n%s", d)
	}
}

// TestGtp5gSeriesFlowMarkNotReused: deleting a QER frees its
// flow mark, and the next QER gets that value. The PDR that took the mark
// from the deleted QER must stop writing it; in the first revision it kept
// it, so two flows left N3 with the same mark.
func TestGtp5gSeriesFlowMarkNotReused(t *testing.T) {
	requireSeries(t)
	setMarkModeProc(t, "flow")
	l := newGtp5gLab(t)
	l.programRAN(t)
	l.upf.AddQER(t, 1, 1, flowA)
	l.upf.AddFAR(t, 1, 1, gtp5gtest.FARForward(100, "10.100.0.2"))
	l.upf.AddPDR(t, 1, 1, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.2", FARID: 1, QERIDs: []uint32{1}})
	observe := make([]uint32, 32)
	for i := range observe {
		observe[i] = uint32(i + 1)
	}
	before := marksOnN3(t, "flow A", observe, markFieldMask, l.sA, l.ueA, pktsA)
	if len(before) != 1 {
		t.Fatalf("flow A before the delete left N3 with marks %v; want one", before)
	}
	var freed uint32
	for m := range before {
		freed = m
	}

	l.upf.Remove(t, "qer", 1, 1)
	time.Sleep(time.Second) // the mark returns to the IDA after an RCU grace period
	l.upf.AddQER(t, 1, 2, flowB)
	l.upf.AddFAR(t, 1, 2, gtp5gtest.FARForward(100, "10.100.0.2"))
	l.upf.AddPDR(t, 1, 2, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.3", FARID: 2, QERIDs: []uint32{2}})

	a := marksOnN3(t, "flow A, its QER deleted", observe, markFieldMask, l.sA, l.ueA, pktsA)
	b := marksOnN3(t, "flow B, new QER", observe, markFieldMask, l.sB, l.ueB, pktsB)
	if _, ok := b[freed]; !ok {
		t.Fatalf("the new QER's flow left N3 with marks %v, not the freed mark %#x: the IDA did not reuse it, the check proves nothing", b, freed)
	}
	for m := range a {
		if _, shared := b[m]; shared {
			t.Errorf("flow A (QER deleted) and flow B (new QER) both leave N3 with mark %#x: two flows share one class", m)
		}
	}
	if len(a) != 0 {
		t.Errorf("flow A still carries marks %v after its QER was deleted; want none", a)
	}
}

// TestGtp5gSeriesFramedRouteN3Mark: a downlink packet routed
// to gtp5g by its framed-route mark (bit 31 + prefix length) must leave
// N3 with the QoS value as its whole mark (and mark 0 when off, as stock);
// the first revision kept bit 31.
func TestGtp5gSeriesFramedRouteN3Mark(t *testing.T) {
	requireSeries(t)
	l := newGtp5gLab(t)
	l.programRAN(t)
	l.gnb.IP(t, "addr", "add", "10.70.0.5/32", "dev", "lo")
	ue := listenUDP(t, l.gnb, "10.70.0.5:5300")
	l.root.IP(t, "route", "add", "10.70.0.0/24", "dev", "upfgtp")
	l.upf.AddQER(t, 1, 1, gtp5gtest.QER{QFI: 5, MBRKbps: 30000})
	l.upf.AddFAR(t, 1, 1, gtp5gtest.FARForward(100, "10.100.0.2"))
	pdr := []nl.Attr{
		{Type: gtp5gnl.PDR_PRECEDENCE, Value: nl.AttrU32(32)},
		{Type: gtp5gnl.PDR_FAR_ID, Value: nl.AttrU32(1)},
		{Type: gtp5gnl.PDR_QER_ID, Value: nl.AttrU32(1)},
		{Type: gtp5gnl.PDR_PDI, Value: nl.AttrList{
			{Type: gtp5gtest.PDISrcIntf, Value: nl.AttrU8(gtp5gtest.SrcCore)},
			{Type: pdiFramedRoute, Value: nl.AttrList{{Type: 1, Value: nl.AttrString("10.70.0.0/24")}}},
		}},
	}
	if err := gtp5gnl.CreatePDROID(l.upf.Client(), l.upf.Link, gtp5gtest.OID(1, 1), pdr); err != nil {
		t.Fatalf("add the framed-route PDR: %v", err)
	}
	const framed = 0x80000018 // gtp5g's framed-route mark for a /24
	s := dialUDPMark(t, "10.200.0.1:7100", "10.70.0.5:5300", framed)
	observe := []uint32{5, 0x80000005, framed, 0x18}
	for _, x := range []struct {
		mode string
		want uint32 // the whole outer mark; 0: the default class
	}{{"qfi", 5}, {"off", 0}} {
		setMarkModeProc(t, x.mode)
		got := marksOnN3(t, "framed route, mode "+x.mode, observe, 0xFFFFFFFF, s, ue, 20)
		if x.want == 0 && len(got) != 0 {
			t.Errorf("mode off: framed-route packets left N3 with marks %v; want mark 0 (stock)", got)
		}
		if x.want != 0 && (len(got) != 1 || got[x.want] != 20) {
			t.Errorf("mode %s: framed-route packets left N3 with whole marks %v; want all 20 with exactly %#x (QFI 5, no framed-route bits)", x.mode, got, x.want)
		}
	}
}

// TestGtp5gSeriesEventSize: an event is sized for its rule. A PDR with
// many port ranges is announced in full; one whose attributes cannot fit a
// netlink attribute (over 64 KiB) makes every listener resync at once
// (ENOBUFS). The first revision guessed NLMSG_GOODSIZE and dropped both
// events silently.
func TestGtp5gSeriesEventSize(t *testing.T) {
	abi := requireSeries(t)
	ns, r := seriesDevice(t, "gtpf6")
	r.AddFAR(t, 1, 1, gtp5gtest.FARForward(100, "10.100.0.2"))
	events := listenEvents(t, ns, abi)

	ports := func(n int) nl.AttrBytes {
		b := make([]byte, 0, 4*n)
		for i := 0; i < n; i++ {
			b = append(b, nlenc.Uint32Bytes(uint32(1000+i)|uint32(1000+i)<<16)...)
		}
		return b
	}
	fd := func(sport, dport int) nl.Attr {
		rule := nl.AttrList{
			{Type: gtp5gnl.FLOW_DESCRIPTION_ACTION, Value: nl.AttrU8(gtp5gnl.SDF_FILTER_PERMIT)},
			{Type: gtp5gnl.FLOW_DESCRIPTION_DIRECTION, Value: nl.AttrU8(gtp5gnl.SDF_FILTER_OUT)},
			{Type: gtp5gnl.FLOW_DESCRIPTION_PROTOCOL, Value: nl.AttrU8(17)},
			{Type: gtp5gnl.FLOW_DESCRIPTION_SRC_IPV4, Value: gtp5gtest.IPv4("10.200.0.2")},
			{Type: gtp5gnl.FLOW_DESCRIPTION_DEST_IPV4, Value: gtp5gtest.IPv4("10.60.0.1")},
		}
		if sport > 0 {
			rule = append(rule, nl.Attr{Type: gtp5gnl.FLOW_DESCRIPTION_SRC_PORT, Value: ports(sport)})
		}
		if dport > 0 {
			rule = append(rule, nl.Attr{Type: gtp5gnl.FLOW_DESCRIPTION_DEST_PORT, Value: ports(dport)})
		}
		return nl.Attr{Type: gtp5gnl.PDI_SDF_FILTER, Value: nl.AttrList{{Type: gtp5gnl.SDF_FILTER_FLOW_DESCRIPTION, Value: rule}}}
	}
	pdr := func(pdi ...nl.Attr) []nl.Attr {
		return []nl.Attr{
			{Type: gtp5gnl.PDR_PRECEDENCE, Value: nl.AttrU32(32)},
			{Type: gtp5gnl.PDR_FAR_ID, Value: nl.AttrU32(1)},
			{Type: gtp5gnl.PDR_PDI, Value: append(nl.AttrList{{Type: gtp5gtest.PDISrcIntf, Value: nl.AttrU8(gtp5gtest.SrcCore)},
				{Type: gtp5gnl.PDI_UE_ADDR_IPV4, Value: gtp5gtest.IPv4("10.60.0.1")}}, pdi...)},
		}
	}
	// expectPDR waits for the PDR's event and checks the port lists it
	// carries, or accepts ENOBUFS (lost, but the listener knows).
	expectPDR := func(what string, sport, dport int) {
		t.Helper()
		for _, e := range events.collect(3 * time.Second) {
			if e.err != nil {
				if errors.Is(e.err, unix.ENOBUFS) {
					t.Logf("%s: listener told to resync (ENOBUFS)", what)
					return
				}
				t.Fatalf("%s: listener: %v", what, e.err)
			}
			if e.ev.nest != abi.nestPDR {
				continue
			}
			sdf := attrsOf(attrsOf(attrsOf(e.ev.rule)[gtp5gnl.PDR_PDI])[gtp5gnl.PDI_SDF_FILTER])
			rule := attrsOf(sdf[gtp5gnl.SDF_FILTER_FLOW_DESCRIPTION])
			gs, gd := len(rule[gtp5gnl.FLOW_DESCRIPTION_SRC_PORT])/4, len(rule[gtp5gnl.FLOW_DESCRIPTION_DEST_PORT])/4
			t.Logf("%s: event of %d bytes, %d+%d port ranges", what, e.ev.size, gs, gd)
			if gs != sport || gd != dport {
				t.Errorf("%s: event carries %d+%d port ranges, want %d+%d", what, gs, gd, sport, dport)
			}
			return
		}
		t.Errorf("%s: neither an event nor ENOBUFS within 3s: the listener does not know it lost the PDR", what)
	}

	// 1200 ranges: 4.8 KiB of ports, more than NLMSG_GOODSIZE (the first
	// revision's event skb happened to have the room).
	if err := gtp5gnl.CreatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), pdr(fd(0, 1200))); err != nil {
		t.Fatalf("add a PDR with 1200 port ranges: %v", err)
	}
	expectPDR("PDR with 1200 port ranges", 0, 1200)
	// 4000 + 4000 ranges: 32 KiB.
	if err := gtp5gnl.UpdatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), pdr(fd(4000, 4000))); err != nil {
		t.Fatalf("update the PDR to 4000+4000 port ranges: %v", err)
	}
	expectPDR("PDR with 4000+4000 port ranges", 4000, 4000)
	// Plus 1800 framed routes (each request stays under 64 KiB; the PDR's
	// attributes do not): no event can carry it.
	routes := nl.AttrList{}
	for i := 0; i < 1800; i++ {
		routes = append(routes, nl.Attr{Type: uint16(i + 1), Value: nl.AttrString(fmt.Sprintf("10.%d.%d.0/24", 71+i/256, i%256))})
	}
	if err := gtp5gnl.UpdatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, 1), pdr(nl.Attr{Type: pdiFramedRoute, Value: routes})); err != nil {
		t.Fatalf("update the PDR with 1800 framed routes: %v", err)
	}
	resync := false
	for _, e := range events.collect(3 * time.Second) {
		switch {
		case errors.Is(e.err, unix.ENOBUFS):
			resync = true
		case e.err != nil:
			t.Fatalf("listener: %v", e.err)
		default:
			t.Errorf("an event (op %d, %d bytes) for a PDR whose attributes exceed 64 KiB", e.ev.op, e.ev.size)
		}
	}
	if !resync {
		t.Error("PDR over 64 KiB: no ENOBUFS within 3s: the listener does not know it lost the PDR")
	} else {
		t.Log("PDR over 64 KiB: listener told to resync (ENOBUFS)")
	}
}

// TestGtp5gSeriesForwardingPolicy. Downlink: gtp5g never
// applies a FAR's forwarding policy there, so it must not suppress the
// QoS mark (the first revision did); and the outer route is chosen before
// the mark, so an 'ip rule fwmark' for the QoS value does not steer N3
// packets. Uplink: the forwarding policy's mark wins over the QoS value.
func TestGtp5gSeriesForwardingPolicy(t *testing.T) {
	requireSeries(t)
	setMarkModeProc(t, "qfi")
	l := newGtp5gLab(t)
	l.programRAN(t)
	l.upf.AddQER(t, 1, 1, flowA) // QFI 2
	l.upf.AddFAR(t, 1, 1, farAttrs(100, "10.100.0.2", "77"))
	l.upf.AddPDR(t, 1, 1, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.2", FARID: 1, QERIDs: []uint32{1}})
	l.upf.AddFAR(t, 1, 4, farAttrs(0, "", "77"))
	l.upf.AddPDR(t, 1, 4, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcAccess, FTEID: 200, FTEIDAddr: "10.100.0.1", OHR: true, FARID: 4, QERIDs: []uint32{1}})
	// Were the tunnel's route looked up with the QoS mark, this rule would
	// blackhole every downlink packet.
	l.root.IP(t, "route", "add", "blackhole", "10.100.0.0/24", "table", "100")
	l.root.IP(t, "rule", "add", "fwmark", "2", "lookup", "100")
	t.Cleanup(func() { _, _ = l.root.TryIP("rule", "del", "fwmark", "2", "lookup", "100") })

	dl := marksOnN3(t, "downlink, FAR with a forwarding policy", []uint32{2, 77}, 0xFFFFFFFF, l.sA, l.ueA, pktsA)
	if len(dl) != 1 || dl[2] != pktsA {
		t.Errorf("downlink with a forwarding policy left N3 with marks %v; want all %d with the QoS value 2", dl, pktsA)
	}
	ul := marksOn(t, "n6", "uplink, FAR with a forwarding policy", []uint32{2, 77}, 0xFFFFFFFF, l.sUL, l.dnUL, pktsUL)
	if len(ul) != 1 || ul[77] != pktsUL {
		t.Errorf("uplink with a forwarding policy left N6 with marks %v; want all %d with the policy's mark 77", ul, pktsUL)
	}
}

// TestGtp5gSeriesRejectsInvalid: the knob commands validate
// their values against a policy and say why through extack.
func TestGtp5gSeriesRejectsInvalid(t *testing.T) {
	abi := requireSeries(t)
	c, err := genetlink.Dial(nil)
	if err != nil {
		t.Fatalf("generic netlink: %v", err)
	}
	defer c.Close()
	if err := c.SetOption(netlink.ExtendedAcknowledge, true); err != nil {
		t.Fatalf("extended acks: %v", err)
	}
	req := func(cmd uint8, attrs ...[]byte) error {
		var data []byte
		for _, a := range attrs {
			data = append(data, a...)
		}
		_, err := c.Execute(genetlink.Message{Header: genetlink.Header{Command: cmd, Version: abi.family.Version}, Data: data},
			abi.family.ID, netlink.Request|netlink.Acknowledge)
		return err
	}
	attr := func(typ uint16, payload ...byte) []byte {
		n := 4 + len(payload)
		b := append([]byte{byte(n), byte(n >> 8), byte(typ), byte(typ >> 8)}, payload...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	for _, x := range []struct {
		what string
		cmd  uint8
		data [][]byte
	}{
		{"mark mode 4", abi.setMark, [][]byte{attr(abi.markAttr, 4)}},
		{"mark mode as u32", abi.setMark, [][]byte{attr(abi.markAttr, 1, 0, 0, 0)}},
		{"no mark mode", abi.setMark, nil},
		{"policer 2", abi.setPolicer, [][]byte{attr(abi.polAttr, 2)}},
		{"no policer value", abi.setPolicer, nil},
	} {
		err := req(x.cmd, x.data...)
		var oe *netlink.OpError
		switch {
		case err == nil:
			t.Errorf("%s: accepted", x.what)
		case !errors.As(err, &oe) || oe.Message == "":
			t.Errorf("%s: rejected (%v) without an extack message", x.what, err)
		default:
			t.Logf("%s: %v (extack %q)", x.what, oe.Err, oe.Message)
		}
	}
	for _, f := range []struct{ file, want string }{{"qos_mark", "off\n"}, {"qos", "QoS Enable: 0\n"}} {
		if got := readProc(t, f.file); got != f.want {
			t.Errorf("/proc/gtp5g/%s after the rejected requests: %q, want %q", f.file, got, f.want)
		}
	}
}

// pdiFramedRoute is gtp5g's GTP5G_PDI_FRAMED_ROUTE (go-gtp5gnl v1.4.6 has
// no name for it).
const pdiFramedRoute = 6

// setMarkModeProc sets the mark mode through /proc/gtp5g/qos_mark (both
// revisions of the series have it) and back to off when the test ends.
func setMarkModeProc(t *testing.T, mode string) {
	t.Helper()
	if err := os.WriteFile("/proc/gtp5g/qos_mark", []byte(mode+"\n"), 0o644); err != nil {
		t.Fatalf("mark mode %s: %v", mode, err)
	}
	t.Cleanup(func() { _ = os.WriteFile("/proc/gtp5g/qos_mark", []byte("off\n"), 0o644) })
}

// marksOnN3 sends n datagrams with s, waits for them at c, and returns how
// many left N3 with each observed mark (under mask); the default class
// (no observed mark) is left out.
func marksOnN3(t *testing.T, what string, observe []uint32, mask uint32, s *udpSender, c *udpCounter, n int) map[uint32]uint64 {
	t.Helper()
	return marksOn(t, "n3", what, observe, mask, s, c, n)
}

func marksOn(t *testing.T, dev, what string, observe []uint32, mask uint32, s *udpSender, c *udpCounter, n int) map[uint32]uint64 {
	t.Helper()
	counters := newMarkCountersMask(t, dev, observe, mask)
	before := c.n.Load()
	s.send(t, n, payload, pktGap)
	if got := waitCounts(map[*udpCounter]int64{c: before + int64(n)}, 5*time.Second)[c] - before; got != int64(n) {
		t.Errorf("%s: %d of %d datagrams arrived", what, got, n)
	}
	time.Sleep(200 * time.Millisecond)
	all := counters.packets(t)
	counters.remove()
	out := map[uint32]uint64{}
	for m, p := range all {
		if m != 0 && p > 0 {
			out[m] = p
		}
	}
	t.Logf("%s: %s egress packets by mark: %v (default class %d)", what, dev, out, all[0])
	return out
}

// dialUDPMark is dialUDP in the root namespace with SO_MARK set on the
// socket, as a packet the framed-route rules marked.
func dialUDPMark(t *testing.T, src, dst string, mark int) *udpSender {
	t.Helper()
	s := dialUDP(t, gtp5gtest.Root(), src, dst)
	rc, err := s.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, mark) }); err != nil || serr != nil {
		t.Fatalf("SO_MARK %#x: %v %v", mark, err, serr)
	}
	return s
}
