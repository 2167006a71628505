package shaper

import (
	"encoding/json"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Rate and Size read and write the text ParseRate/FormatRate and
// ParseSize/FormatSize do, and a bad text leaves the value as it was.
func TestRateSizeText(t *testing.T) {
	for _, v := range []uint64{0, 1, 8, 999, 1000, 1234, 1_500_000, 30 * mbit, 1e9, 2e12, MaxRate} {
		r := Rate(v)
		text, err := r.MarshalText()
		if err != nil || string(text) != FormatRate(v) || r.String() != FormatRate(v) {
			t.Errorf("Rate(%d): text %q, %v; String %q; want %q", v, text, err, r.String(), FormatRate(v))
		}
		var back Rate
		if err := back.UnmarshalText(text); err != nil || back != r {
			t.Errorf("Rate(%d): %q read back as %d, %v", v, text, back, err)
		}
	}
	for _, v := range []uint32{0, 1, 1514, 1024, 32 << 10, 12500, 8 << 20, 1 << 31} {
		z := Size(v)
		text, err := z.MarshalText()
		if err != nil || string(text) != FormatSize(v) || z.String() != FormatSize(v) {
			t.Errorf("Size(%d): text %q, %v; String %q; want %q", v, text, err, z.String(), FormatSize(v))
		}
		var back Size
		if err := back.UnmarshalText(text); err != nil || back != z {
			t.Errorf("Size(%d): %q read back as %d, %v", v, text, back, err)
		}
	}
	r := Rate(7)
	err := r.UnmarshalText([]byte("5mbps"))
	want := `invalid rate "5mbps": unknown unit "mbps" (want bit, kbit, mbit, gbit or tbit; byte units are not accepted)`
	if err == nil || err.Error() != want || r != 7 {
		t.Errorf("bad rate: %d, %v; want 7 kept and %q", r, err, want)
	}
	z := Size(7)
	err = z.UnmarshalText([]byte("lots"))
	want = `invalid size "lots": want a non-negative integer of bytes with an optional unit (b, k, m)`
	if err == nil || err.Error() != want || z != 7 {
		t.Errorf("bad size: %d, %v; want 7 kept and %q", z, err, want)
	}
}

// The text methods make Rate and Size read and write tc's notation
// wherever text is decoded: JSON strings, YAML scalars.
func TestRateSizeEncodings(t *testing.T) {
	v := struct {
		R Rate `json:"r" yaml:"r"`
		Z Size `json:"z" yaml:"z"`
	}{}
	if err := yaml.Unmarshal([]byte("r: 1.5Mbit/s\nz: 32k\n"), &v); err != nil || v.R != 1_500_000 || v.Z != 32<<10 {
		t.Errorf("yaml: %+v, %v", v, err)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `{"r":"1500kbit","z":"32k"}` {
		t.Errorf("json: %s, %v", b, err)
	}
	if err := yaml.Unmarshal([]byte("r: fast\n"), &v); err == nil || !strings.HasPrefix(err.Error(), `invalid rate "fast"`) {
		t.Errorf("yaml bad rate: %v", err)
	}
}

// A flows file's rates are read as Rate while the file is decoded, and a
// bad one is reported after, with the flow and the key, as before; a value
// that is no text at all is yaml's error, with its line.
func TestFlowsFileRateErrors(t *testing.T) {
	const head = "link: 30mbit\nflows:\n"
	tests := []struct{ name, in, want string }{
		{"bad gbr", head + "  - {name: A, qer: 1, gbr: fast}\n",
			`f.yaml: flow A: gbr: invalid rate "fast": want a non-negative number with a unit (bit, kbit, mbit, gbit, tbit)`},
		{"bad session ambr", head + "  - {qer: 1, session_ambr: 5mbps}\n",
			`f.yaml: flow #1: session_ambr: invalid rate "5mbps": unknown unit "mbps" (want bit, kbit, mbit, gbit or tbit; byte units are not accepted)`},
		{"first bad rate", head + "  - {name: A, qer: 1, session_ambr: x, mbr: y}\n", `f.yaml: flow A: mbr: invalid rate "y"`},
		{"bad link", "link: 1e3\n", `f.yaml: link: invalid rate "1e3": unknown unit "e3"`},
		{"zero link", "link: 0mbit\n", `f.yaml: link: must be above 0`},
		{"bad policy rate", "link: 30mbit\npolicy: {non_gbr_min: 2mbit, default_rate: 5mbps, static_ceil: x}\n",
			`f.yaml: policy: static_ceil: invalid rate "x"`},
		{"policy rate after a good one", "link: 30mbit\npolicy: {non_gbr_min: 2mbit, default_rate: 5mbps}\n",
			`f.yaml: policy: default_rate: invalid rate "5mbps": unknown unit`},
		{"empty link", "link: ''\n", `f.yaml: link: missing`},
		{"list as rate", head + "  - {name: A, qer: 1}\n  - {name: B, qer: 2, mbr: [1, 2]}\n",
			`f.yaml: line 4: cannot unmarshal !!seq into string`},
		{"map as link", "link: {a: 1}\n", `f.yaml: line 1: cannot unmarshal !!map into string`},
		// The file is checked whole before a bad rate is reported.
		{"unknown key after a bad rate", head + "  - {name: A, qer: 1, gbr: fast}\n  - {name: B, qer: 2, gbrr: 1}\n",
			`f.yaml: line 4: unknown key "gbrr" in a flow`},
		{"missing qer before a bad rate", head + "  - {name: A, gbr: fast}\n", `f.yaml: flow A: qer: missing`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFlowsFile("f.yaml", []byte(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line starting with %q", err, tc.want)
			}
		})
	}
	ff, err := ParseFlowsFile("f.yaml", []byte(head+"  - {qer: 1, gbr: '', mbr: ~, session_ambr: 2mbit}\n"))
	if err != nil || len(ff.Flows) != 1 || ff.Flows[0].GBR != 0 || ff.Flows[0].MBR != 0 || ff.Flows[0].SessionAMBR != 2*mbit {
		t.Errorf("empty and null rates: %+v, %v; want them absent", ff.Flows, err)
	}
}

// FuzzRateText: any text Rate reads is at most MaxRate and reads back from
// its own text; any it refuses is one line naming the text.
func FuzzRateText(f *testing.F) {
	for _, s := range []string{"30mbit", "1.5Mbit/s", "0", "1e3", "010mbit", "99999tbit", "5mbps", " 7 kbit ", "-1", ".5k", "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var r Rate
		if err := r.UnmarshalText([]byte(s)); err != nil {
			if r != 0 || !strings.HasPrefix(err.Error(), "invalid rate ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q: %d, %q", s, r, err)
			}
			return
		}
		if r > MaxRate {
			t.Errorf("%q: %d above MaxRate", s, r)
		}
		text, _ := r.MarshalText()
		var back Rate
		if err := back.UnmarshalText(text); err != nil || back != r {
			t.Errorf("%q: %d as %q reads back as %d, %v", s, r, text, back, err)
		}
	})
}

// FuzzSizeText: any text Size reads is at most 2 GiB and reads back from
// its own text; any it refuses is one line naming the text.
func FuzzSizeText(f *testing.F) {
	for _, s := range []string{"32k", "1514", "8m", "0b", "032k", "lots", "2048m", "2049m", " 1 kb", "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var z Size
		if err := z.UnmarshalText([]byte(s)); err != nil {
			if z != 0 || !strings.HasPrefix(err.Error(), "invalid size ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q: %d, %q", s, z, err)
			}
			return
		}
		if z > 1<<31 {
			t.Errorf("%q: %d above 2 GiB", s, z)
		}
		text, _ := z.MarshalText()
		var back Size
		if err := back.UnmarshalText(text); err != nil || back != z {
			t.Errorf("%q: %d as %q reads back as %d, %v", s, z, text, back, err)
		}
	})
}
