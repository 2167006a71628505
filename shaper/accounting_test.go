package shaper

import (
	"strings"
	"testing"
)

func TestEncapOverhead(t *testing.T) {
	for _, c := range []struct {
		name string
		e    Encap
		dir  Direction
		want uint32
		desc string
	}{
		{"N3 Ethernet IPv4", DefaultEncap, Downlink, 58, "Ethernet 14 + IPv4 20 + UDP 8 + GTP-U 8 + optional fields 4 + PDU Session Container 4 = 58"},
		{"N3 Ethernet IPv6", Encap{L2: 14, L2Name: "Ethernet", OuterIPv6: true}, Downlink, 78, "IPv6 40"},
		{"N3 VLAN tag in the packet", Encap{L2: 18, L2Name: "Ethernet + VLAN tag"}, Downlink, 62, "Ethernet + VLAN tag 18 +"},
		{"N3 raw IP", Encap{L2Name: "raw IP"}, Downlink, 44, "raw IP 0 + IPv4 20"},
		{"N6 Ethernet", DefaultEncap, Uplink, 14, "Ethernet 14"},
		{"N6 raw IP", Encap{L2Name: "raw IP"}, Uplink, 0, "raw IP 0"},
	} {
		if got := c.e.Overhead(c.dir); got != c.want {
			t.Errorf("%s: overhead %d, want %d", c.name, got, c.want)
		}
		if d := c.e.Describe(c.dir); !strings.Contains(d, c.desc) {
			t.Errorf("%s: %q lacks %q", c.name, d, c.desc)
		}
	}
}

func TestResolveOverhead(t *testing.T) {
	pol := DefaultPolicy(30e6)
	if pol.Accounting != AccountPacket || pol.Overhead.Fixed {
		t.Fatalf("default policy: accounting %s overhead %s, want packet auto", pol.Accounting, pol.Overhead)
	}
	if o, why := pol.ResolveOverhead(Downlink, DefaultEncap); o != 58 || !strings.HasPrefix(why, "N3: Ethernet 14") {
		t.Errorf("auto N3: %d %q", o, why)
	}
	if o, why := pol.ResolveOverhead(Uplink, DefaultEncap); o != 14 || !strings.HasPrefix(why, "N6: ") {
		t.Errorf("auto N6: %d %q", o, why)
	}
	pol.Overhead = Overhead{Fixed: true, Bytes: 50}
	if o, why := pol.ResolveOverhead(Downlink, DefaultEncap); o != 50 || !strings.Contains(why, "policy") {
		t.Errorf("fixed: %d %q", o, why)
	}
	pol.Accounting = AccountFrame
	if o, _ := pol.ResolveOverhead(Downlink, DefaultEncap); o != 0 {
		t.Errorf("frame: overhead %d, want 0", o)
	}
}

func TestParseAccountingAndOverhead(t *testing.T) {
	for in, want := range map[string]Accounting{"": AccountPacket, "packet": AccountPacket, "frame": AccountFrame} {
		if got, err := ParseAccounting(in); err != nil || got != want {
			t.Errorf("ParseAccounting(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseAccounting("bytes"); err == nil || !strings.Contains(err.Error(), `"bytes"`) {
		t.Errorf("ParseAccounting(bytes): %v", err)
	}
	for in, want := range map[string]Overhead{"": {}, "auto": {}, "58": {Fixed: true, Bytes: 58}, "0": {Fixed: true}, "14b": {Fixed: true, Bytes: 14}} {
		if got, err := ParseOverhead(in); err != nil || got != want {
			t.Errorf("ParseOverhead(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"-58", "513", "58k", "lots", "0x3a"} {
		if _, err := ParseOverhead(in); err == nil {
			t.Errorf("ParseOverhead(%q): accepted", in)
		}
	}
}

func TestParseFlowsFileAccounting(t *testing.T) {
	ff, err := ParseFlowsFile("f.yaml", []byte("link: 30mbit\npolicy: {accounting: frame, overhead: 50}\nflows: []\n"))
	if err != nil || ff.Policy.Accounting != AccountFrame || ff.Policy.Overhead != (Overhead{Fixed: true, Bytes: 50}) {
		t.Fatalf("policy %+v, %v", ff.Policy, err)
	}
	ff, err = ParseFlowsFile("f.yaml", []byte("link: 30mbit\n"))
	if err != nil || ff.Policy.Accounting != AccountPacket || ff.Policy.Overhead.Fixed {
		t.Fatalf("default: %+v, %v", ff.Policy, err)
	}
	for body, want := range map[string]string{
		"link: 30mbit\npolicy: {accounting: wire}\n": "f.yaml: policy: accounting: unknown accounting \"wire\"",
		"link: 30mbit\npolicy: {overhead: -58}\n":    "f.yaml: policy: overhead: invalid overhead \"-58\"",
	} {
		if _, err := ParseFlowsFile("f.yaml", []byte(body)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	pol := DefaultPolicy(30e6)
	pol.Accounting = 7
	if _, ps, ok := CheckPolicy(pol); ok || len(ps) == 0 || ps[0].Field != "accounting" {
		t.Errorf("CheckPolicy with accounting 7: ok %v, %v", ok, ps)
	}
}
