package shaper

import (
	"bytes"
	"errors"
	"io"

	"gopkg.in/yaml.v3"
)

// A flows file for tens of thousands of flows is written by a program, one
// flow per line in YAML's flow style:
//
//	flows:
//	  - {name: f1, seid: 1, qer: 1, qfi: 9, gbr: 1mbit, mbr: 2mbit, mark: 1}
//
// yaml.v3 takes about 2 s for 65,518 such lines (it builds a node tree of
// the whole file first). fastFlows reads exactly this form, and only it:
// every entry of the flows section on a line of its own, keys the flow
// schema knows, each once, values plain words of letters, digits and
// "_.+/" (no quotes, spaces, nulls or YAML indicators). Then yaml.v3 reads
// only the file's head (link and policy), and the result is what yaml.v3
// gives for the whole file (a differential test checks it). Any other
// line, anywhere in the flows section, sends the whole file through
// yaml.v3, so every error is still yaml.v3's, with its line number.

// fastFlows splits data into its head (everything before a top-level
// "flows:" line) and the flows parsed from the lines after it; ok is false
// when the flows section is not entirely in the fast form.
func fastFlows(data []byte) (head []byte, flows []*flowYAML, ok bool) {
	start, body := flowsSection(data)
	if start < 0 {
		return nil, nil, false
	}
	indent := -1
	for len(body) > 0 {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if !printable(line) {
			return nil, nil, false
		}
		if blankOrComment(line) {
			continue
		}
		n := len(line) - len(bytes.TrimLeft(line, " "))
		if indent < 0 {
			indent = n
		}
		if n != indent {
			return nil, nil, false
		}
		f, ok := fastFlowLine(line[n:])
		if !ok {
			return nil, nil, false
		}
		flows = append(flows, f)
	}
	return data[:start], flows, true
}

// flowsSection finds the top-level "flows:" line (nothing after it but
// spaces or a comment): start is its offset, body what follows it; start
// is -1 when there is none.
func flowsSection(data []byte) (start int, body []byte) {
	for off := 0; off < len(data); {
		line, _, _ := bytes.Cut(data[off:], []byte{'\n'})
		next := off + len(line) + 1
		if rest, ok := bytes.CutPrefix(line, []byte("flows:")); ok {
			rest = bytes.TrimSuffix(rest, []byte{'\r'})
			if blankOrComment(rest) && printable(rest) && (len(rest) == 0 || rest[0] == ' ') {
				if next > len(data) {
					next = len(data)
				}
				return off, data[next:]
			}
			return -1, nil
		}
		off = next
	}
	return -1, nil
}

// blankOrComment reports a line of spaces with, at most, a comment.
func blankOrComment(line []byte) bool {
	t := bytes.TrimLeft(line, " ")
	return len(t) == 0 || t[0] == '#'
}

// fastFlowLine parses "- {key: value, ...}" with an optional comment
// after it.
func fastFlowLine(line []byte) (*flowYAML, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("- {"))
	if !ok {
		return nil, false
	}
	end := bytes.IndexByte(rest, '}')
	if end < 0 || !blankOrComment(rest[end+1:]) || (end+1 < len(rest) && rest[end+1] == '#') {
		return nil, false
	}
	f := &flowYAML{}
	var seen uint16
	for _, pair := range bytes.Split(rest[:end], []byte{','}) {
		key, value, ok := bytes.Cut(bytes.Trim(pair, " "), []byte(": "))
		value = bytes.TrimLeft(value, " ")
		if !ok || !plainWord(value) {
			return nil, false
		}
		i, dst := f.field(string(key))
		if dst == nil || seen&(1<<i) != 0 {
			return nil, false
		}
		seen |= 1 << i
		*dst = string(value)
	}
	return f, true
}

// field returns the field a key sets and its index (nil: a key the
// schema does not have).
func (f *flowYAML) field(key string) (int, *string) {
	for i, p := range []struct {
		key string
		dst *string
	}{{"name", &f.Name}, {"seid", &f.SEID}, {"qer", &f.QER}, {"qfi", &f.QFI}, {"direction", &f.Direction},
		{"gbr", &f.GBR}, {"mbr", &f.MBR}, {"mark", &f.Mark}, {"teid", &f.TEID}, {"session_ambr", &f.SessionAMBR}} {
		if p.key == key {
			return i, p.dst
		}
	}
	return 0, nil
}

// plainWord reports a value YAML reads as the same string in any context:
// letters, digits and "_.+/", starting with a letter or digit, and not one
// of YAML's words for null.
func plainWord(v []byte) bool {
	if len(v) == 0 || !isAlnum(v[0]) {
		return false
	}
	for _, c := range v {
		if !isAlnum(c) && c != '_' && c != '.' && c != '+' && c != '/' {
			return false
		}
	}
	switch string(v) {
	case "null", "Null", "NULL":
		return false
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// headIsMapping reports whether head is one YAML document holding a
// mapping at the first column without a flows key (or nothing): only then
// does yaml.v3 read the whole file as the head's mapping with "flows" as
// one more key.
func headIsMapping(head []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(head))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return true
	case err != nil:
		return false
	}
	var next yaml.Node
	if !errors.Is(dec.Decode(&next), io.EOF) {
		return false // a second document
	}
	if len(doc.Content) != 1 {
		return false
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode || m.Column != 1 || m.Style&yaml.FlowStyle != 0 {
		return false
	}
	for i := 0; i < len(m.Content); i += 2 {
		if m.Content[i].Value == "flows" {
			return false // a second flows key: yaml.v3's error to give
		}
	}
	return true
}

// printable reports a line of printable ASCII and tabs (YAML refuses some
// control characters, even in comments; anything else is left to it).
func printable(line []byte) bool {
	for _, c := range line {
		if (c < ' ' || c > '~') && c != '\t' {
			return false
		}
	}
	return true
}
