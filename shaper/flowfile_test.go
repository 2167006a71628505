package shaper

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func examplesDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "examples")
}

func TestLoadSeedExamples(t *testing.T) {
	aware, err := LoadFlowsFile(filepath.Join(examplesDir(t), "seed-aware.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seedFlows(), aware.Flows); diff != "" {
		t.Errorf("aware flows (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(DefaultPolicy(30*mbit), aware.Policy); diff != "" {
		t.Errorf("aware policy (-want +got):\n%s", diff)
	}
	static, err := LoadFlowsFile(filepath.Join(examplesDir(t), "seed-static.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(aware.Flows, static.Flows); diff != "" {
		t.Errorf("static arm must keep the same contracts (-aware +static):\n%s", diff)
	}
	if static.Policy.Mode != Static || static.Policy.StaticRate != 10*mbit || static.Policy.StaticCeil != 30*mbit {
		t.Errorf("static policy %+v, want static 10/30 Mbit", static.Policy)
	}
}

func TestParseFlowsFileErrors(t *testing.T) {
	const head = "link: 30mbit\nflows:\n"
	tests := []struct{ name, in, want string }{
		{"unknown key", head + "  - {name: A, qer: 1, gbrr: 5mbit}\n", `f.yaml: line 3: unknown key "gbrr" in a flow`},
		{"unknown top key", "link: 30mbit\nfoo: 1\n", `f.yaml: line 2: unknown key "foo" at top level`},
		{"two unknown keys", head + "  - {name: A, qer: 1, gbrr: 5mbit, mbrr: 6mbit}\n", `f.yaml: line 3: unknown key "gbrr" in a flow (and 1 more)`},
		{"non-numeric rate", head + "  - {name: A, qer: 1, gbr: fast}\n", `f.yaml: flow A: gbr: invalid rate "fast"`},
		{"negative rate", head + "  - {name: A, qer: 1, mbr: -5mbit}\n", `f.yaml: flow A: mbr: invalid rate "-5mbit"`},
		{"byte unit", head + "  - {name: A, qer: 1, mbr: 5mbps}\n", `f.yaml: flow A: mbr: invalid rate "5mbps": unknown unit`},
		{"mbr below gbr", head + "  - {name: B, qer: 2, gbr: 5mbit, mbr: 4mbit}\n", `f.yaml: flow B: mbr: MBR 4mbit below GBR 5mbit`},
		{"qfi above 63", head + "  - {name: C, qer: 3, qfi: 64}\n", `f.yaml: flow C: qfi: 64 above 63`},
		{"negative mark", head + "  - {name: C, qer: 3, mark: -1}\n", `f.yaml: flow C: mark: invalid value "-1"`},
		{"missing qer", head + "  - {name: D}\n", `f.yaml: flow D: qer: missing`},
		{"unnamed flow", head + "  - {qer: 1, gbr: x}\n", `f.yaml: flow #1: gbr: invalid rate "x"`},
		{"missing link", "flows: []\n", `f.yaml: link: missing`},
		{"bad mode", "link: 1mbit\npolicy: {mode: fancy}\n", `f.yaml: policy: mode: unknown mode "fancy"`},
		// Zero-padded integers would be octal to strconv and YAML 1.1:
		// "010" must not silently become 8.
		{"zero-padded mark", head + "  - {name: A, qer: 1, mark: 010}\n", `f.yaml: flow A: mark: invalid value "010": zero-padded`},
		{"zero-padded qer", head + "  - {name: A, qer: 07}\n", `f.yaml: flow A: qer: invalid value "07": zero-padded`},
		{"zero-padded qfi", head + "  - {name: A, qer: 1, qfi: 010}\n", `f.yaml: flow A: qfi: invalid value "010"`},
		{"zero-padded seid", head + "  - {name: A, seid: 0010, qer: 1}\n", `f.yaml: flow A: seid: invalid value "0010"`},
		{"zero-padded teid", head + "  - {name: A, qer: 1, teid: 0100}\n", `f.yaml: flow A: teid: invalid value "0100"`},
		{"binary prefix", head + "  - {name: A, qer: 1, mark: 0b101}\n", `f.yaml: flow A: mark: invalid value "0b101"`},
		{"underscore", head + "  - {name: A, qer: 1, mark: 1_000}\n", `f.yaml: flow A: mark: invalid value "1_000"`},
		{"plus sign", head + "  - {name: A, qer: +1}\n", `f.yaml: flow A: qer: invalid value "+1"`},
		{"zero-padded rate", head + "  - {name: A, qer: 1, gbr: 010mbit}\n", `f.yaml: flow A: gbr: invalid rate "010mbit": zero-padded`},
		{"zero-padded link", "link: 030mbit\n", `f.yaml: link: invalid rate "030mbit"`},
		// Input that used to be ignored without a word.
		{"null flow", head + "  - {name: A, qer: 1}\n  - ~\n", `f.yaml: flow #2: empty entry (null)`},
		{"second document", "link: 30mbit\n---\nlink: 20mbit\n", `f.yaml: line 2: a second YAML document`},
		{"empty second document", "link: 30mbit\n---\n", `f.yaml: line 2: a second YAML document`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFlowsFile("f.yaml", []byte(tc.in))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line starting with %q", err, tc.want)
			}
		})
	}
}

func TestParseFlowsFilePolicy(t *testing.T) {
	in := `link: 1gbit
policy: {mode: static, static_rate: 2mbit, static_ceil: 4mbit, non_gbr_min: 500kbit, burst: 64k, cburst: 16k,
  quantum: 3000, max_frame: 9018, prio: 3, admission: clamp, classifier: bpf, leaf: fifo, leaf_limit: 200, leaf_interval: 50ms}
flows:
  - {name: U, seid: 0x10, qer: 9, qfi: 9, direction: uplink, gbr: 1.5Mbit/s, mbr: 3000000, mark: 0x20009, teid: 0x64, session_ambr: 10mbit}
`
	ff, err := ParseFlowsFile("p.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultPolicy(1_000_000_000)
	want.Mode, want.StaticRate, want.StaticCeil, want.NonGBRMin, want.DefaultRate = Static, 2*mbit, 4*mbit, 500_000, 500_000
	want.Admission = Clamp
	// The HTB knobs, given as top-level keys, read as htb's (which decodes
	// them: package shaper/htb).
	want.BackendKnobs = KnobSet{}.With("htb", Knobs{"burst": "64k", "cburst": "16k", "quantum": "3000", "max_frame": "9018",
		"prio": "3", "classifier": "bpf", "leaf": "fifo", "leaf_limit": "200", "leaf_interval": "50ms"})
	if diff := cmp.Diff(want, ff.Policy); diff != "" {
		t.Errorf("policy (-want +got):\n%s", diff)
	}
	wf := []Flow{{ID: FlowID{16, 9}, Name: "U", QFI: 9, Direction: Uplink, GBR: 1_500_000, MBR: 3 * mbit, SessionAMBR: 10 * mbit, Mark: 0x20009, TEID: 0x64}}
	if diff := cmp.Diff(wf, ff.Flows); diff != "" {
		t.Errorf("flows (-want +got):\n%s", diff)
	}
}

func TestParseUintBases(t *testing.T) {
	good := map[string]uint64{"0": 0, "10": 10, "0x10": 16, "0X1f": 31, "0o10": 8, "0O7": 7, " 42 ": 42, "4294967295": 1<<32 - 1}
	for in, want := range good {
		if got, err := ParseUint(in, 32); err != nil || got != want {
			t.Errorf("ParseUint(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "010", "00", "0x", "0o", "0b1", "0x-1", "-1", "+1", "1_0", "4294967296", "1e3", "0o8"} {
		if v, err := ParseUint(in, 32); err == nil {
			t.Errorf("ParseUint(%q) = %d, want an error", in, v)
		}
	}
}

// A flows file is read through a bound: a large input fails at once with
// one line instead of growing until the machine runs out of memory.
// Anything but a regular file is refused before it is read: a FIFO with no
// writer (which would block the command for good), an endless device, a
// directory.
func TestLoadFlowsFileRefusesNonRegularFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, kind string }{{fifo, "a FIFO"}, {"/dev/zero", "a character device"}, {t.TempDir(), "a directory"}} {
		if _, err := os.Stat(c.path); err != nil {
			continue
		}
		done := make(chan error, 1)
		go func() { _, err := LoadFlowsFile(c.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file ("+c.kind+")") || strings.Contains(err.Error(), "\n") {
				t.Errorf("LoadFlowsFile(%s) = %v, want one line refusing %s", c.path, err, c.kind)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("LoadFlowsFile(%s) still blocked after 10 s", c.path)
		}
	}
}

func TestLoadFlowsFileBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	big := []byte("link: 30mbit\nflows:\n" + strings.Repeat("  # padding padding padding padding padding padding padding\n", MaxFlowsFileSize/60+1))
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFlowsFile(p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a %d-byte flows file: err = %v, want a size refusal", len(big), err)
	}
	if _, err := LoadFlowsFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml: open: no such file") {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestParseRate(t *testing.T) {
	good := map[string]uint64{"15mbit": 15 * mbit, "500kbit": 500_000, "30Mbit": 30 * mbit, "30Mbit/s": 30 * mbit,
		"1gbit": 1e9, "1200": 1200, "0": 0, "1.5mbit": 1_500_000, "2Tbit": 2e12, "8bit": 8, "0.5mbit": 500_000, "0mbit": 0}
	for in, want := range good {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "-1mbit", "5mbps", "5 furlongs", "1e3mbit", "99999tbit", "010mbit", "00.5mbit"} {
		if v, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %d, want an error", in, v)
		}
	}
	if s := FormatRate(15 * mbit); s != "15mbit" {
		t.Errorf("FormatRate = %q", s)
	}
}

func FuzzParseFlowsFile(f *testing.F) {
	for _, name := range []string{"seed-aware.yaml", "seed-static.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "examples", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("link: 1mbit\nflows: [{qer: 1, gbr: 2mbit, mbr: 1mbit}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ff, err := ParseFlowsFile("fuzz.yaml", b)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			return
		}
		pol, probs, ok := CheckPolicy(ff.Policy)
		if !ok {
			if _, bad := FirstError(probs); !bad {
				t.Errorf("policy refused without an error problem: %v", probs)
			}
			return
		}
		adm := Admit(ff.Flows, pol, nil, nil)
		if len(adm.Flows) > len(ff.Flows) {
			t.Errorf("admitted %d of %d flows", len(adm.Flows), len(ff.Flows))
		}
	})
}
