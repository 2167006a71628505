package status

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/tests/shapetest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// sendWithPriority sends 1000-byte UDP datagrams every millisecond from
// inside ns to dst:9 with SO_PRIORITY prio (HTB takes a priority that names
// one of its classes) until the test ends.
func sendWithPriority(t *testing.T, ns *testenv.NetNS, dst [4]byte, prio uint32) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	if err := netns.Set(ns.Handle); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	fd, serr := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err := netns.Set(orig); err != nil {
		t.Fatal(err) // the thread stays locked: it is in the wrong netns
	}
	orig.Close()
	runtime.UnlockOSThread()
	if serr != nil {
		t.Fatalf("socket: %v", serr)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PRIORITY, int(prio)); err != nil {
		unix.Close(fd)
		t.Fatalf("SO_PRIORITY %#x: %v", prio, err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1000)
		to := &unix.SockaddrInet4{Port: 9, Addr: dst}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = unix.Sendto(fd, buf, 0, to) // drops (ENOBUFS) are expected when over ceil
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done; unix.Close(fd) })
}

// The class/mode part of status on the stock-gtp5g setup (GTP-U classifier
// on N3 and N6): every flow gets the class the planner gave it, found
// through the attached programs' (TEID, QFI) maps, and the class that
// carries traffic shows a live rate within its ceil.
func TestIntegrationStatusTreesGTPU(t *testing.T) {
	l := shapetest.NewStockLab(t)
	l.Shape(t)
	l.NS.Run(t, "ip", "addr", "add", "10.77.0.1/24", "dev", l.N3)
	// A neighbour that answers nothing: the datagrams leave N3 (through its
	// tree) and the peer drops them (wrong MAC).
	l.NS.Run(t, "ip", "neigh", "add", "10.77.0.9", "lladdr", "02:00:00:00:00:09", "dev", l.N3)

	// Flows as qosview gives them on stock gtp5g: no marks.
	var flows []shaper.Flow
	for _, f := range shapetest.StockFlows() {
		f.Mark = 0
		flows = append(flows, f)
	}
	busy, ok := l.DL.FlowClass(flows[0].ID)
	if !ok {
		t.Fatalf("planned tree lacks %s", flows[0].ID)
	}
	sendWithPriority(t, l.NS, [4]byte{10, 77, 0, 9}, shapetest.ClassID(t, busy.Handle))
	time.Sleep(200 * time.Millisecond) // past the initial burst

	v, err := DeviceTrees{NetNS: l.NS.Handle, N3: l.N3, N6: l.N6, Interval: 500 * time.Millisecond}.Read(context.Background(), flows)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(v.Problems) != 0 || !strings.Contains(v.RateSource, "500ms") {
		t.Errorf("problems %q, rate source %q", v.Problems, v.RateSource)
	}
	if len(v.Devices) != 2 {
		t.Fatalf("devices %+v, want N3 and N6", v.Devices)
	}
	wantGTPU := map[string][]string{"N3": {gtpu.FilterDownlink, gtpu.FilterUplinkN3}, "N6": {gtpu.FilterUplinkN6}}
	for _, d := range v.Devices {
		if !d.Tree || d.Root != "6771:" || d.FlowClasses != 2 || d.Mode != "gtpu" || d.Error != "" {
			t.Errorf("%s %s: %+v; want tree 6771: with 2 flow classes, mode gtpu", d.Role, d.Dev, d)
		}
		var got []string
		for _, g := range d.Attachments {
			got = append(got, g.Name)
			if g.Entries != 2 || g.Dev != d.Dev {
				t.Errorf("%s: %s has %d entries (dev %q), want 2", d.Dev, g.Name, g.Entries, g.Dev)
			}
		}
		if strings.Join(got, ",") != strings.Join(wantGTPU[d.Role], ",") {
			t.Errorf("%s programs %q, want %q", d.Role, got, wantGTPU[d.Role])
		}
	}
	for _, f := range flows {
		rep := l.DL
		if f.Direction == shaper.Uplink {
			rep = l.UL
		}
		c, _ := rep.FlowClass(f.ID)
		ci, ok := v.Classes[FlowKey{f.ID, f.Direction}]
		if !ok || ci.Class != c.Handle || ci.Rate == nil {
			t.Errorf("flow %s %s: %+v (found %v); want class %s with a rate", f.ID, f.Direction, ci, ok, c.Handle)
			continue
		}
		rate := *ci.Rate
		switch {
		case f.ID == flows[0].ID && f.Direction == flows[0].Direction:
			// 8 Mbit/s offered into a 2/4 Mbit/s class: at most ceil plus
			// one 32 KiB burst over the interval.
			t.Logf("busy flow %s: class %s, live rate %s (ceil %s)", f.ID, ci.Class, shaper.FormatRate(rate), shaper.FormatRate(c.Ceil))
			if rate < 1e6 || rate > c.Ceil+32*1024*8*2 {
				t.Errorf("busy flow %s: rate %d bit/s, want about its ceil %s", f.ID, rate, shaper.FormatRate(c.Ceil))
			}
		case rate != 0:
			t.Errorf("idle flow %s %s: rate %d bit/s, want 0", f.ID, f.Direction, rate)
		}
	}
}

// With the built-in mark classifier (fw, or bpf where the kernel lacks
// cls_fw) the flows are found by mark and the mode says which.
func TestIntegrationStatusTreesMark(t *testing.T) {
	testenv.RequireCmd(t, "ip")
	ns := testenv.NewNetNS(t)
	ns.AddVethPair(t, "gqm0", "gqm1")
	flows := []shaper.Flow{
		{ID: shaper.FlowID{SEID: 1, QERID: 1}, QFI: 1, Direction: shaper.Downlink, GBR: 1e6, MBR: 2e6, Mark: 0x21},
		{ID: shaper.FlowID{SEID: 2, QERID: 1}, QFI: 1, Direction: shaper.Downlink, GBR: 1e6, MBR: 2e6, Mark: 0x22},
	}
	be, err := backends.Open("gqm0", backends.Options{NetNS: ns.Handle})
	if err != nil {
		t.Fatal(err)
	}
	applied, err := be.Apply(context.Background(), flows, shaper.DefaultPolicy(100e6), shaper.ApplyOptions{Strict: true})
	_ = be.Close()
	if err != nil || len(applied.Problems) > 0 {
		t.Fatalf("apply: %v (problems %v)", err, applied.Problems)
	}
	v, err := DeviceTrees{NetNS: ns.Handle, N3: "gqm0", N6: "gqnone0", Interval: 50 * time.Millisecond}.Read(context.Background(), flows)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(v.Devices) != 2 || !strings.HasPrefix(v.Devices[0].Mode, "mark (") || len(v.Devices[0].Attachments) != 0 ||
		!v.Devices[0].Tree || v.Devices[0].Root != "6771:" || v.Devices[0].FlowClasses != 2 ||
		v.Devices[0].Accounting != "packet" || v.Devices[0].Overhead != 58 {
		t.Fatalf("devices %+v; want N3 with tree 6771: of 2 flow classes counting user packets (overhead 58, an Ethernet N3 device), mode mark (fw|bpf), no gtpu programs", v.Devices)
	}
	// The missing N6 is a problem naming it, not an error.
	if v.Devices[1].Error == "" || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "gqnone0") {
		t.Errorf("missing N6: device %+v, problems %q", v.Devices[1], v.Problems)
	}
	for _, f := range flows {
		c, _ := applied.FlowClass(f.ID)
		if ci := v.Classes[FlowKey{f.ID, f.Direction}]; ci.Class != c.Handle || ci.Rate == nil || *ci.Rate != 0 {
			t.Errorf("flow %s: %+v; want class %s, rate 0", f.ID, ci, c.Handle)
		}
	}
	// The whole report: the patched-gtp5g flow with mark 0x21 lands in
	// flow 1's class, and the device names the mode.
	rep, err := Collect(context.Background(), fakeSource{feats: 0xf}, func() Trees {
		return DeviceTrees{NetNS: ns.Handle, N3: "gqm0", Interval: 50 * time.Millisecond}
	})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := applied.FlowClass(flows[0].ID)
	if len(rep.Flows) != 1 || rep.Flows[0].Class != c.Handle || len(rep.Devices) != 1 || !strings.HasPrefix(rep.Devices[0].Mode, "mark (") || len(rep.Problems) != 0 {
		t.Errorf("report flows %+v, devices %+v, problems %q; want flow 1's class %s on N3 classified by mark", rep.Flows, rep.Devices, rep.Problems, c.Handle)
	}
}
