package edtbackend

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
)

// On a device without the edt tree, Apply attaches the program before it
// writes the tree, and the tree's default class last: a marked flow's
// packets, sent all through the apply, never land in the default class.
// With the tree written first they did, for as long as the maps, the pins
// and the attachment took, and that class then drained them unpaced.
// Needs sch_fq (the VM).
func TestIntegrationApplyClassifiesFromTheFirstPacket(t *testing.T) {
	ns, dev := edtDevice(t, "eo-", "ebo")
	ns.Run(t, "sysctl", "-qw", "net.ipv6.conf."+dev+".disable_ipv6=1") // no unmarked packets of the kernel's own
	ns.Run(t, "ip", "addr", "add", "10.97.0.1/24", "dev", dev)
	ns.Run(t, "ip", "neigh", "add", "10.97.0.2", "lladdr", "02:00:00:00:00:02", "dev", dev) // no ARP either
	conn := markedUDP(t, ns.Do, 0x10)                                                       // flow A's mark
	stop, done := make(chan struct{}), sync.WaitGroup{}
	stopped := sync.OnceFunc(func() { close(stop); done.Wait() })
	t.Cleanup(stopped)
	done.Add(1)
	go func() {
		defer done.Done()
		to, buf := &net.UDPAddr{IP: net.IPv4(10, 97, 0, 2), Port: 9}, make([]byte, 200)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = conn.WriteToUDP(buf, to) // the program drops what its horizon refuses
			time.Sleep(100 * time.Microsecond)
		}
	}()
	time.Sleep(50 * time.Millisecond) // traffic before the tree
	b := openIn(t, ns, dev)
	if _, err := b.Apply(context.Background(), testFlows(), testPolicy(), shaper.ApplyOptions{Strict: true}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	stopped()
	if n := classPackets(t, ns.Run(t, "tc", "-s", "class", "show", "dev", dev, "classid", Handle(MinorDefault))); n != 0 {
		t.Errorf("the default class %s sent %d packets of a flow the program paces: the tree took packets before the program was attached", Handle(MinorDefault), n)
	}
	if n := classPackets(t, ns.Run(t, "tc", "-s", "class", "show", "dev", dev, "classid", Handle(MinorNonGBR))); n == 0 {
		t.Errorf("the non-GBR class %s sent nothing: flow A's packets did not pass the tree", Handle(MinorNonGBR))
	}
}

// markedUDP opens a UDP socket, inside a namespace through do, whose
// packets carry mark.
func markedUDP(t *testing.T, do func(testing.TB, func()), mark int) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	do(t, func() {
		var err error
		if c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 97, 0, 1)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { c.Close() })
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if cerr := raw.Control(func(fd uintptr) { err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, mark) }); cerr != nil || err != nil {
		t.Fatalf("SO_MARK: %v %v", cerr, err)
	}
	return c
}

var sentPkts = regexp.MustCompile(`Sent \d+ bytes (\d+) pkt`)

// classPackets is the packets `tc -s class show` says one class sent.
func classPackets(t *testing.T, out string) int {
	t.Helper()
	m := sentPkts.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no packet count in:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
