package shaper

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// slowFlows is what yaml.v3 reads from the whole file: the head's keys and
// the flows.
func slowFlows(data []byte) (head map[string]any, flows []*flowYAML, err error) {
	var y struct {
		Link   string      `yaml:"link"`
		Policy *PolicyYAML `yaml:"policy"`
		Flows  []*flowYAML `yaml:"flows"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&y); err != nil && !(errors.Is(err, io.EOF) && len(bytes.TrimSpace(data)) == 0) {
		return nil, nil, err
	}
	return map[string]any{"link": y.Link, "policy": y.Policy}, y.Flows, nil
}

// checkFast fails when the fast path takes data (its flows section, and a
// head yaml.v3 reads alone: else the whole file goes to yaml.v3) but
// yaml.v3 reads the whole file otherwise.
func checkFast(t *testing.T, data []byte) (fast bool) {
	t.Helper()
	head, flows, ok := fastFlows(data)
	if !ok || !headIsMapping(head) {
		return false
	}
	gotHead, _, err := slowFlows(head)
	if err != nil {
		return false
	}
	wantHead, wantFlows, err := slowFlows(data)
	if err != nil {
		t.Fatalf("fast path took a file yaml.v3 refuses (%v):\n%s", err, data)
	}
	if diff := cmp.Diff(wantHead, gotHead); diff != "" {
		t.Fatalf("head differs from yaml.v3's (-yaml +fast):\n%s\nfile:\n%s", diff, data)
	}
	if diff := cmp.Diff(wantFlows, flows); diff != "" {
		t.Fatalf("flows differ from yaml.v3's (-yaml +fast):\n%s\nfile:\n%s", diff, data)
	}
	// ParseFlowsFile's own decode, against yaml.v3 alone.
	got, gotErr := decodeFlowsFile("f.yaml", data)
	want, wantErr := decodeYAML("f.yaml", data, false)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("decode: %v; yaml.v3 alone: %v\nfile:\n%s", gotErr, wantErr, data)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("decoded file differs from yaml.v3's (-yaml +fast):\n%s\nfile:\n%s", diff, data)
	}
	return true
}

func TestFastFlowsTakesTheGeneratedForm(t *testing.T) {
	var b strings.Builder
	b.WriteString("# generated\nlink: 100gbit\npolicy:\n  mode: aware\nflows:\n")
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "  - {name: f%d, seid: %d, qer: 1, qfi: 9, direction: downlink, gbr: 1mbit, mbr: 2Mbit/s, mark: 0x%x}\n", i, i, i)
		if i%10 == 0 {
			b.WriteString("\n  # ten more\n")
		}
	}
	if !checkFast(t, []byte(b.String())) {
		t.Fatal("the generated one-flow-per-line form went through yaml.v3")
	}
	_, flows, _ := fastFlows([]byte(b.String()))
	if len(flows) != 100 || flows[99].Mark != "0x64" || flows[0].MBR != "2Mbit/s" {
		t.Errorf("%d flows, last %+v", len(flows), flows[len(flows)-1])
	}
}

// Anything else goes through yaml.v3: each of these files is read by it
// alone (whatever it makes of them).
func TestFastFlowsLeavesTheRestToYAML(t *testing.T) {
	const head = "link: 30mbit\nflows:\n"
	for _, body := range []string{
		"  - {name: 'A', seid: 1}\n",          // quotes
		"  - {name: A B, seid: 1}\n",          // a space in a value
		"  - {name: A, seid: ~}\n",            // null
		"  - {name: A, seid: null}\n",         // null
		"  - {name: A, seid: 1, seid: 2}\n",   // a key twice
		"  - {name: A, sied: 1}\n",            // an unknown key
		"  - {name: A, seid: 1,}\n",           // a trailing comma
		"  - {name: A, seid: -1}\n",           // an indicator first
		"  - {name: A, seid:1}\n",             // no space after the colon
		"  - {name: A, seid: 1}#c\n",          // a comment without a space
		"  - {name: A}\n   - {name: B}\n",     // two indents
		"  - name: A\n    seid: 1\n",          // block style
		"  - {name: A}\nlink: 1mbit\n",        // a key after the flows
		"  - {name: A}\n---\nlink: 1mbit\n",   // a second document
		"  - {name: A, seid: 1\n  }\n",        // a mapping over two lines
		"  - {name: A,\tseid: 1}\n",           // a tab
		"  - {name: A, seid: {x: 1}}\n",       // nesting
		"  - {name: \"A\\u0041\", seid: 1}\n", // escapes
	} {
		if checkFast(t, []byte(head+body)) {
			t.Errorf("fast path took %q", body)
		}
	}
	for _, data := range []string{"link: 1mbit\nflows: []\n", "link: 1mbit\n", "flows:  x\n", "link: 1mbit\n flows:\n  - {name: A}\n",
		"link: 1mbit\nflows: ~\nflows:\n  - {name: A}\n"} { // the last: flows twice
		if checkFast(t, []byte(data)) {
			t.Errorf("fast path took %q", data)
		}
	}
}

// FuzzFastFlows: whatever file the fast path takes, yaml.v3 reads the same
// flows and head from.
func FuzzFastFlows(f *testing.F) {
	f.Add([]byte("link: 1mbit\nflows:\n  - {name: a, seid: 1, mbr: 2mbit}\n  # c\n  - {qfi: 9}  # c\n"))
	f.Add([]byte("flows:\n- {mark: 0x10, teid: 0o7}\n"))
	f.Add([]byte("link: 1mbit\r\nflows:\r\n  - {name: a, gbr: 1.5mbit}\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFast(t, data)
	})
}

// TestFastFlowsRandomLines mixes valid flow lines with small corruptions:
// the fast path and yaml.v3 agree wherever the fast path takes the file.
func TestFastFlowsRandomLines(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	keys := []string{"name", "seid", "qer", "qfi", "direction", "gbr", "mbr", "mark", "teid", "session_ambr", "x"}
	values := []string{"1", "0x1f", "0o7", "010", "1mbit", "30Mbit/s", "true", "yes", "1e6", "a_b", "~", "null", "-1", "'q'", "a b", "1.5", "NULL", "Null", "y", "off"}
	taken := 0
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		b.WriteString("link: 1gbit\nflows:\n")
		for n := rng.Intn(4); n >= 0; n-- {
			var pairs []string
			for k := rng.Intn(4); k >= 0; k-- {
				pairs = append(pairs, keys[rng.Intn(len(keys))]+": "+values[rng.Intn(len(values))])
			}
			fmt.Fprintf(&b, "  - {%s}\n", strings.Join(pairs, ", "))
		}
		if checkFast(t, []byte(b.String())) {
			taken++
		}
	}
	if taken == 0 {
		t.Error("the fast path took none of the random files")
	}
}
