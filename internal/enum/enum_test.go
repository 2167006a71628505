package enum

import (
	"fmt"
	"testing"
)

type color uint8

const (
	red color = iota + 1
	green
	blue
)

var colors = Table[color]{What: "color", Empty: "red", Fold: true, Names: []Name[color]{
	{Value: red, Name: "red", Aliases: []string{"r"}},
	{Value: green, Name: "green"},
	{Value: blue, Name: "blue"},
}}

func TestTable(t *testing.T) {
	for in, want := range map[string]color{"": red, "red": red, "R": red, "Green": green, "blue": blue} {
		if got, err := colors.Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := colors.Parse("pink"); err == nil || err.Error() != `unknown color "pink" (want red, green or blue)` {
		t.Errorf("Parse(pink): %v", err)
	}
	if s := colors.String(green); s != "green" {
		t.Errorf("String(green) = %q", s)
	}
	if s := colors.String(9); s != "color(9)" {
		t.Errorf("String(9) = %q", s)
	}
	if colors.Known(0) || !colors.Known(blue) {
		t.Error("Known")
	}
	strict := Table[color]{What: "mark mode", Names: colors.Names[:2]}
	if _, err := strict.Parse(""); err == nil {
		t.Error(`Parse("") without a default succeeded`)
	}
	if _, err := strict.Parse("RED"); err == nil {
		t.Error("Parse(RED) without Fold succeeded")
	}
	if s := strict.String(7); s != "mark-mode(7)" {
		t.Errorf("String(7) = %q", s)
	}
	if l := strict.List(); l != "red or green" {
		t.Errorf("List = %q", l)
	}
}

type shade uint8

var shades = Table[shade]{What: "shade", Names: []Name[shade]{{Value: 1, Name: "dark"}}}

func (s shade) String() string { return shades.String(s) }

// TestStringOfUnknownValue: a type whose String is the table's prints an
// unknown value by number, without calling itself again.
func TestStringOfUnknownValue(t *testing.T) {
	if s := shade(4).String(); s != "shade(4)" {
		t.Errorf("shade(4).String() = %q", s)
	}
	if s := fmt.Sprint(shade(1)); s != "dark" {
		t.Errorf("Sprint(shade(1)) = %q", s)
	}
}
