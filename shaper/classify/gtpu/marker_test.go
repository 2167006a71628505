package gtpu

import (
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper/edt"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// UplinkMarker is the uplink half without mark_egress: gtpu_ingress on N3
// marks each session's packets, the upf netns forwards them out of N6,
// and the N6 device's own program (here the edt pacer, which finds flows
// by mark) sees each flow's mark. Nothing of the marker is attached to N6;
// Remove takes gtpu_ingress off N3.
func TestUplinkMarkerFeedsN6Program(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	loadForTest(t)
	gnb, upf, dn := testenv.NewNetNS(t), testenv.NewNetNS(t), testenv.NewNetNS(t)
	n3, n3peer := testenv.UniqueName("gq3m"), testenv.UniqueName("gq3n")
	n6, n6peer := testenv.UniqueName("gq6m"), testenv.UniqueName("gq6n")
	upf.Run(t, "ip", "link", "add", n3, "type", "veth", "peer", "name", n3peer, "netns", gnb.Name)
	upf.Run(t, "ip", "link", "add", n6, "type", "veth", "peer", "name", n6peer, "netns", dn.Name)
	for _, x := range []struct {
		ns        *testenv.NetNS
		dev, addr string
	}{{upf, n3, "10.97.0.1/24"}, {gnb, n3peer, "10.97.0.2/24"}, {upf, n6, "10.96.0.1/24"}, {dn, n6peer, "10.96.0.2/24"}} {
		x.ns.Run(t, "ip", "addr", "add", x.addr, "dev", x.dev)
		x.ns.Run(t, "ip", "link", "set", x.dev, "up")
	}
	gnb.Run(t, "ip", "route", "add", "10.96.0.0/24", "via", "10.97.0.1")
	upf.Run(t, "sysctl", "-qw", "net.ipv4.ip_forward=1")

	p, err := edt.Load(edt.LoadOptions{Sessions: 8, Flows: 8, Marks: 8, Keys: 8, Overhead: 14})
	if err != nil {
		t.Skipf("edt pacer: %v", err)
	}
	defer p.Close()
	for id, mark := range map[uint32]uint32{1: 0x1001, 2: 0x1002} {
		if err := p.AddFlow(id, edt.FlowSpec{Marks: []uint32{mark}, DelayBudget: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	h, env := classifierEnv(t, upf, n6)
	a, _, err := Attach(h, env.Link, Egress, p.Program(), "edt-egress")
	if err != nil {
		t.Fatal(err)
	}
	defer Detach(h, a)

	c := New(Options{N3: n3})
	defer c.Close(h)
	m := c.UplinkMarker()
	desired := tree(flowClass(0x11, 1, 100, 2, 0x1001), flowClass(0x11, 2, 200, 2, 0x1002))
	if _, err := m.Sync(t.Context(), env, desired); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Sync(t.Context(), env, desired); err != nil || res.Writes != 0 {
		t.Errorf("second sync: %+v, %v; want no writes", res, err)
	}
	if out := upf.Run(t, "tc", "filter", "show", "dev", n6, "egress"); strings.Contains(out, "mark-egress") {
		t.Errorf("the marker attached mark_egress to N6:\n%s", out)
	}

	s := udpIn(t, gnb, "10.97.0.2:2152", 0)
	send(t, s, "10.96.0.2:2152", gtpPayload(100, 2), 5)
	send(t, s, "10.96.0.2:2152", gtpPayload(200, 2), 7)
	want := map[uint32]uint64{1: 5, 2: 7}
	got := map[uint32]uint64{}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for id := range want {
			st, err := p.Flow(id)
			if err != nil {
				t.Fatal(err)
			}
			got[id] = st.Packets
		}
		if got[1] == want[1] && got[2] == want[2] {
			break
		}
	}
	if got[1] != want[1] || got[2] != want[2] {
		t.Errorf("N6 program's flows counted %v, want %v", got, want)
	}

	if err := m.Remove(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	if out := upf.Run(t, "tc", "filter", "show", "dev", n3, "ingress"); strings.Contains(out, "gtpqos") {
		t.Errorf("N3 ingress filter left after Remove:\n%s", out)
	}
	if out := upf.Run(t, "tc", "filter", "show", "dev", n6, "egress"); !strings.Contains(out, "edt-egress") {
		t.Errorf("Remove took the N6 program off:\n%s", out)
	}
}
