package lab

import (
	"net/netip"
	"os"
	"strings"
	"testing"
)

func ipv4UDP(src, dst string, sport, dport uint16) []byte {
	b := make([]byte, 28)
	b[0] = 0x45
	b[9] = 17
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	b[20], b[21] = byte(sport>>8), byte(sport)
	b[22], b[23] = byte(dport>>8), byte(dport)
	return b
}

func TestPDRMatchByDNEndpoint(t *testing.T) {
	tab := newPDRTable(SeedPDRs())
	for _, c := range []struct {
		src, dst string
		sport    uint16
		want     int
	}{
		{"192.168.100.2", "10.60.0.1", 5201, 0},
		{"192.168.100.4", "10.60.0.1", 5202, 1},
		{"192.168.100.5", "10.60.0.1", 5203, 2},
		{"192.168.100.5", "10.60.0.1", 5201, -1}, // wrong port
		{"192.168.100.2", "10.60.0.9", 5201, -1}, // wrong UE
	} {
		if got := tab.match(ipv4UDP(c.src, c.dst, c.sport, 9)); got != c.want {
			t.Errorf("%s:%d -> %s matched %d, want %d", c.src, c.sport, c.dst, got, c.want)
		}
	}
}

func TestTwoUEsSameQFIIsConfiguration(t *testing.T) {
	pdrs := TwoUEPDRs()
	if err := ValidatePDRs(pdrs); err != nil {
		t.Fatal(err)
	}
	if pdrs[0].QFI != pdrs[1].QFI || pdrs[0].TEID == pdrs[1].TEID || pdrs[0].SEID == pdrs[1].SEID || pdrs[0].Mark == pdrs[1].Mark {
		t.Fatalf("want same QFI, distinct TEID/SEID/mark: %+v", pdrs)
	}
}

func TestValidatePDRs(t *testing.T) {
	for name, c := range map[string]struct {
		mut  func(p []PDR)
		want string
	}{
		"dup name":  {func(p []PDR) { p[1].Name = "A" }, "name used twice"},
		"dup dn":    {func(p []PDR) { p[1].DN = p[0].DN }, "already selects"},
		"ue range":  {func(p []PDR) { p[0].UE = netip.MustParseAddr("10.1.0.1") }, "not an address in"},
		"dn is upf": {func(p []PDR) { p[0].DN = netip.AddrPortFrom(UPFN6Addr, 1) }, "not an address:port"},
		"qfi":       {func(p []PDR) { p[2].QFI = 64 }, "6-bit"},
	} {
		p := SeedPDRs()
		c.mut(p)
		err := ValidatePDRs(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
	if err := ValidatePDRs(SeedPDRs()); err != nil {
		t.Fatal(err)
	}
}

func TestLoadPDRs(t *testing.T) {
	pdrs, err := LoadPDRs("testdata/two-ue-pdrs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := TwoUEPDRs()
	want[0].Offered = 45e6
	if len(pdrs) != 2 || pdrs[0] != want[0] || pdrs[1] != want[1] {
		t.Fatalf("loaded %+v, want %+v", pdrs, want)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown key": "pdrs:\n  - {name: X, colour: red}\n",
		"bad ue":      "pdrs:\n  - {name: X, ue: nope, dn: \"192.168.100.2:1\", ue_port: 1}\n",
		"invalid":     "pdrs:\n  - {name: X, ue: 10.60.0.1, dn: \"10.0.0.1:1\", ue_port: 1}\n",
		// yaml.v3 reads a zero-padded integer as octal: refused instead.
		"zero-padded mark": "pdrs:\n  - {name: X, ue: 10.60.0.1, dn: \"192.168.100.2:1\", ue_port: 1, qfi: 2, mark: 010}\n",
		"null row":         "pdrs:\n  - ~\n",
		"two documents":    "pdrs: []\n---\npdrs: []\n",
	} {
		p := dir + "/" + strings.ReplaceAll(name, " ", "_") + ".yaml"
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadPDRs(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want an error naming %s", name, err, p)
		}
	}
}

// TestLoadPDRsUnknownKeysOneLine checks that unknown keys give one line that
// names the file, the line and the first key.
func TestLoadPDRsUnknownKeysOneLine(t *testing.T) {
	p := t.TempDir() + "/pdrs.yaml"
	if err := os.WriteFile(p, []byte("pdrs:\n  - {name: X, colour: red}\n  - {name: Y, size: big}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadPDRs(p)
	want := "lab pdrs " + p + `: line 2: unknown key "colour" in a pdr (and 1 more)`
	if err == nil || err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}
