package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper/edtbackend"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// edtFlows is a flows file for the edt backend: one session with an AMBR
// of 3 Mbit/s and two non-GBR flows under it, MBR 1 and 4 Mbit/s (so the
// MBR binds one and the AMBR both), on a 20 Mbit/s link; the overhead is
// the veth's Ethernet header, so rates are in the user's IP bytes.
const edtFlows = `link: 20mbit
policy:
  backend: edt
  overhead: 14
flows:
  - {name: A, seid: 1, qer: 1, qfi: 9, mbr: 1mbit, session_ambr: 3mbit, mark: 0x10}
  - {name: B, seid: 1, qer: 2, qfi: 8, mbr: 4mbit, session_ambr: 3mbit, mark: 0x20}
`

// edtPair is a veth pair across two namespaces of their own (a: sender
// side, shaped; b: receiver), addressed 10.98.0.1 and .2.
type edtPair struct {
	a, b       *testenv.NetNS
	devA, devB string
}

func newEdtPair(t *testing.T) edtPair {
	testenv.RequireCmd(t, "ip", "tc")
	p := edtPair{a: testenv.NewNetNSPrefix(t, "eb-"), b: testenv.NewNetNSPrefix(t, "eb-"), devA: testenv.UniqueName("eba"), devB: testenv.UniqueName("ebb")}
	p.a.Run(t, "ip", "link", "add", p.devA, "type", "veth", "peer", "name", p.devB, "netns", p.b.Name)
	for _, c := range []struct {
		ns        *testenv.NetNS
		dev, addr string
	}{{p.a, p.devA, "10.98.0.1/24"}, {p.b, p.devB, "10.98.0.2/24"}} {
		c.ns.Run(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
		c.ns.Run(t, "ip", "addr", "add", c.addr, "dev", c.dev)
		c.ns.Run(t, "ip", "link", "set", c.dev, "up")
	}
	return p
}

// hasFq reports whether the kernel takes an fq qdisc (tried on the
// receiver's side, then removed).
func (p edtPair) hasFq(t *testing.T) bool {
	if _, err := p.b.Try("tc", "qdisc", "add", "dev", p.devB, "root", "handle", "1:", "fq"); err != nil {
		return false
	}
	p.b.Run(t, "tc", "qdisc", "del", "dev", p.devB, "root")
	return true
}

// dump is what the shaped device holds: qdiscs, classes, egress filters.
func (p edtPair) dump(t *testing.T) string {
	return p.a.Run(t, "tc", "qdisc", "show", "dev", p.devA) + p.a.Run(t, "tc", "class", "show", "dev", p.devA) +
		p.a.Run(t, "tc", "filter", "show", "dev", p.devA, "egress")
}

// pinsGone fails the test if the shaped device's pin directory exists.
func (p edtPair) pinsGone(t *testing.T) {
	t.Helper()
	pins, err := edtbackend.PinsIn(p.a.Handle, p.devA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pins.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pin directory %s: %v; want none", pins.Dir, err)
	}
}

func writeEdtFlows(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "edt.yaml")
	if err := os.WriteFile(path, []byte(edtFlows), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// `gtpqos apply` with backend edt on a kernel without sch_fq (this host)
// exits 1 with one line naming it, and the device keeps what it had: no
// qdisc, class, filter or pin of ours.
func TestIntegrationApplyEdtRefusesWithoutFq(t *testing.T) {
	p := newEdtPair(t)
	if p.hasFq(t) {
		t.Skip("this kernel has sch_fq: nothing to refuse (TestIntegrationEdtPacesFlows runs instead)")
	}
	before := p.dump(t)
	rc, out, errs := runIn(t, p.a, "apply", "-f", writeEdtFlows(t), "--dev", p.devA, "--lock-dir", t.TempDir())
	if rc != 1 || out != "" {
		t.Errorf("apply: rc %d, stdout %q; want 1 and nothing applied", rc, out)
	}
	oneLine(t, "apply backend edt", errs, "edt needs the fq qdisc (sch_fq)")
	if !strings.Contains(errs, p.devA) {
		t.Errorf("refusal %q does not name the device", errs)
	}
	if after := p.dump(t); after != before {
		t.Errorf("apply changed the device:\n%s\nwas:\n%s", after, before)
	}
	p.pinsGone(t)
}

// plan with backend edt shows the fixed tree and the map entries.
func TestPlanEdtFile(t *testing.T) {
	rc, out, errs := runIn(t, nil, "plan", "-f", writeEdtFlows(t), "--dev", "eth1")
	if rc != 0 {
		t.Fatalf("plan: rc %d, stderr %q", rc, errs)
	}
	for _, want := range []string{"root handle 6765: stab overhead -14 linklayer ethernet htb default 2",
		"classid 6765:11 htb rate 10mbit ceil 20mbit burst 32k cburst 32k quantum 12500 prio 1", "fq orphan_mask", "session 1: AMBR 3mbit", "edt/0x10 mark 0x10: MBR 1mbit session 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
}
