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
