// Package yamlerr turns gopkg.in/yaml.v3 decode errors, which list every
// problem on its own line, into one line that names the file, the line and,
// for unknown keys, the key and where it was found. gtpqos prints errors as
// one line; the flows file, the watch config and the lab PDR table all
// report through here.
package yamlerr

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// unknownKey matches yaml.v3's KnownFields message; the type is "pkg.Name"
// for named types, "struct { ... }" for anonymous ones.
var unknownKey = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (.+)$`)

// OneLine returns err, an error from a yaml.v3 decode of the file name, as
// one line: "name: line 3: unknown key "gbrr" in a flow" for an unknown key
// (the phrase after the key is where[T] for the Go type T, without its
// package, that has no such field; nothing if where lacks it), else
// "name: line 3: <yaml.v3's message>". Only the first of several problems is
// described; the count of the others follows as "(and N more)".
func OneLine(name string, err error, where map[string]string) error {
	msg := err.Error()
	more := 0
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg, more = te.Errors[0], len(te.Errors)-1
		if m := unknownKey.FindStringSubmatch(msg); m != nil {
			typ := m[3]
			if i := strings.LastIndexByte(typ, '.'); i >= 0 && !strings.Contains(typ, " ") {
				typ = typ[i+1:]
			}
			msg = fmt.Sprintf("line %s: unknown key %q", m[1], m[2])
			if w := where[typ]; w != "" {
				msg += " " + w
			}
		}
	}
	msg = strings.TrimPrefix(strings.ReplaceAll(strings.TrimSpace(msg), "\n", "; "), "yaml: ")
	if more > 0 {
		msg += fmt.Sprintf(" (and %d more)", more)
	}
	return fmt.Errorf("%s: %s", name, msg)
}

// OneDocument fails when dec, which has decoded the first document of the
// file name, finds another one after it ("---"): gtpqos's files hold one
// document, and a second would otherwise be ignored without a word.
func OneDocument(name string, dec *yaml.Decoder) error {
	var n yaml.Node
	err := dec.Decode(&n)
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return OneLine(name, err, nil)
	}
	return fmt.Errorf("%s: line %d: a second YAML document (after '---'): the file must hold one", name, n.Line)
}
