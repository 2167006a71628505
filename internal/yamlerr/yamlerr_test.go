package yamlerr

import (
	"bytes"
	"testing"

	"gopkg.in/yaml.v3"
)

type inner struct {
	B int `yaml:"b"`
}

type outer struct {
	A int     `yaml:"a"`
	L []inner `yaml:"l"`
}

func decode(t *testing.T, in string, v any) error {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader([]byte(in)))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if err == nil {
		t.Fatalf("decode %q: no error", in)
	}
	return err
}

func TestOneLine(t *testing.T) {
	where := map[string]string{"outer": "at top level", "inner": "in an item"}
	var anon struct {
		A int `yaml:"a"`
	}
	tests := []struct {
		name, in string
		v        any
		want     string
	}{
		{"two unknown keys", "a: 1\nx: 2\ny: 3\n", &outer{}, `f.yaml: line 2: unknown key "x" at top level (and 1 more)`},
		{"nested unknown key", "l:\n  - {b: 1, c: 2}\n", &outer{}, `f.yaml: line 2: unknown key "c" in an item`},
		{"anonymous struct", "a: 1\nzz: 2\n", &anon, `f.yaml: line 2: unknown key "zz"`},
		{"wrong type", "a: x\nl: 3\n", &outer{}, "f.yaml: line 1: cannot unmarshal !!str `x` into int (and 1 more)"},
		{"syntax", "a: [1\n", &outer{}, `f.yaml: line 1: did not find expected ',' or ']'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := OneLine("f.yaml", decode(t, tc.in, tc.v), where).Error()
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
