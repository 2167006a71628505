package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/status"
)

// On a machine without gtp5g (this one) status and policer status print
// exactly one line and exit 1.
func TestNotLoadedSingleLine(t *testing.T) {
	if ok, _ := kmod.Host().Loaded(); ok {
		t.Skip("gtp5g is loaded on this host")
	}
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"policer", "status"}, {"policer", "on"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 1 || errb.String() != "gtp5g module not loaded\n" || out.Len() != 0 {
			t.Errorf("gtpqos %s: exit %d, stderr %q, stdout %q; want 1, \"gtp5g module not loaded\\n\", \"\"",
				strings.Join(args, " "), code, errb.String(), out.String())
		}
	}
}

func TestPolicerUsage(t *testing.T) {
	for _, args := range [][]string{{"policer"}, {"policer", "maybe"}, {"policer", "on", "off"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("gtpqos %s: exit %d, want 2 (usage)", strings.Join(args, " "), code)
		}
	}
}

// statusReport is what status.Collect makes of one GBR flow on a patched
// gtp5g (see the status package's tests), without devices.
func statusReport() status.Report {
	return status.Report{
		Version: "0.10.2", Features: []string{"flow-mark", "qos-events", "policer-ctrl", "mark-ctrl"},
		MarkMode: "flow", Policer: "off (/proc/gtp5g/qos)",
		Flows:    []status.Flow{{SEID: 7, QER: 3, QFI: 2, Direction: "downlink", GBR: 15e6, MBR: 18e6, Mark: 0x21, TEID: 100}},
		Devices:  []status.Device{},
		Problems: []string{},
	}
}

func TestStatusRender(t *testing.T) {
	var buf bytes.Buffer
	renderStatus(&buf, statusReport())
	text := buf.String()
	for _, s := range []string{"gtp5g 0.10.2", "mark mode: flow", "15mbit", "18mbit", "0x21", "downlink", "machine-wide: every UPF on this host shares them"} {
		if !strings.Contains(text, s) {
			t.Errorf("status text lacks %q:\n%s", s, text)
		}
	}
}

func TestStatusClassColumns(t *testing.T) {
	// Stock gtp5g (no features, mark mode off) with an N3 tree classified
	// by the GTP-U programs.
	rep := statusReport()
	rep.Features, rep.MarkMode, rep.Flows[0].Mark = []string{}, "off", 0
	r := uint64(16_700_000)
	rep.Flows[0].Class, rep.Flows[0].Rate, rep.RateSource = "6771:10", &r, "fake"
	rep.Devices = []status.Device{{Role: "N3", Dev: "eth1", Tree: true, Root: "6771:", FlowClasses: 1, Mode: "gtpu",
		Attachments: []shaper.Attachment{{Dev: "eth1", Hook: "egress", Name: gtpu.FilterDownlink, ProgramID: 7, Entries: 1,
			Counters: map[string]uint64{"hit": 5, "miss": 2, "no-qfi": 0, "not-gtp": 0}}}}}
	var buf bytes.Buffer
	renderStatus(&buf, rep)
	for _, s := range []string{"6771:10", "16.70mbit", "N3 eth1 (downlink): tree 6771: with 1 flow classes, classification gtpu; gtpqos-gtpu-egress (program 7): 1 entries, hit 5 miss 2", "RATE: fake", "features: none (stock gtp5g)"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("status text lacks %q:\n%s", s, buf.String())
		}
	}

	// Without devices the columns stay '-' and the text says why.
	rep = statusReport()
	buf.Reset()
	renderStatus(&buf, rep)
	if !strings.Contains(buf.String(), "devices: none given") {
		t.Errorf("without devices: text:\n%s", buf.String())
	}
	if row := strings.Fields(strings.Split(buf.String(), "\n")[3]); row[len(row)-1] != "-" || row[len(row)-2] != "-" {
		t.Errorf("without devices the CLASS and RATE columns are %q, want - -", row[len(row)-2:])
	}
}

// A device line names the tree, the classification mode and, for a device
// status could not read, why.
func TestStatusDeviceLine(t *testing.T) {
	for _, c := range []struct {
		d    status.Device
		want string
	}{
		{status.Device{Role: "N3", Dev: "gqm0", Tree: true, Root: "6771:", FlowClasses: 2, Mode: "mark (fw)"},
			"N3 gqm0 (downlink): tree 6771: with 2 flow classes, classification mark (fw)"},
		{status.Device{Role: "N3", Dev: "gqm0", Tree: true, Root: "6771:", FlowClasses: 2, Mode: "mark (bpf)", Accounting: "packet", Overhead: 58},
			"N3 gqm0 (downlink): tree 6771: with 2 flow classes, accounting packet (classes and RATE count the user's packets, 58 bytes less than each frame), classification mark (bpf)"},
		{status.Device{Role: "N3", Dev: "gqm0", Tree: true, Root: "6771:", FlowClasses: 2, Mode: "mark (bpf)", Accounting: "frame"},
			"N3 gqm0 (downlink): tree 6771: with 2 flow classes, accounting frame (classes and RATE count whole frames), classification mark (bpf)"},
		{status.Device{Role: "N6", Dev: "gqnone0", Mode: "none", Error: "device gqnone0: Link not found"},
			"N6 gqnone0 (uplink): no gtpqos tree, classification none (device gqnone0: Link not found)"},
		{status.Device{Role: "N6", Dev: "eth2", Tree: true, Root: "6771:", FlowClasses: 3, Mode: "gtpu",
			Attachments: []shaper.Attachment{{Name: gtpu.FilterUplinkN6, ProgramID: 9, Entries: 3}}},
			"N6 eth2 (uplink): tree 6771: with 3 flow classes, classification gtpu; gtpqos-mark-egress (program 9): 3 entries"},
	} {
		if got := deviceLine(c.d); got != c.want {
			t.Errorf("deviceLine(%+v) =\n%q, want\n%q", c.d, got, c.want)
		}
	}
	got := counterList(map[string]uint64{"not-gtp": 4, "zz": 9, "miss": 2, "no-qfi": 3, "hit": 1})
	if want := "hit 1 miss 2 no-QFI 3 not-GTP 4 zz 9"; got != want {
		t.Errorf("counterList = %q, want %q", got, want)
	}
}

func TestStatusRateNames(t *testing.T) {
	for v, want := range map[uint64]string{0: "0bit", 999: "999bit", 1500: "1.5kbit", 16_712_345: "16.71mbit", 2_500_000_000: "2.50gbit"} {
		if got := formatLiveRate(v); got != want {
			t.Errorf("formatLiveRate(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestStatusUsage(t *testing.T) {
	for _, args := range [][]string{{"status", "extra"}, {"status", "--interval", "-1s"}, {"status", "--bogus"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("gtpqos %s: exit %d, stderr %q; want 2 and one line", strings.Join(args, " "), code, errb.String())
		}
	}
}
