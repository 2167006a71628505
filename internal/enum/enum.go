// Package enum turns one table of names into an enumeration's String and
// Parse, so every enum in gtpqos prints and parses the same way and its
// error lists the names the table holds.
package enum

import (
	"fmt"
	"strings"
)

// Name is one value and what it is called; Aliases also parse to it.
type Name[T comparable] struct {
	Value   T
	Name    string
	Aliases []string
}

// Table holds an enumeration's names. What names the enumeration in
// messages ("mode", "leaf qdisc"); Empty, if set, is the name "" parses
// as (a setting left out); Fold makes Parse ignore case.
type Table[T comparable] struct {
	What  string
	Names []Name[T]
	Empty string
	Fold  bool
}

// String returns v's name, or What(number) for a value the table lacks.
// The number is printed with %d, which, unlike %v, does not call v's own
// String (this one) again.
func (t *Table[T]) String(v T) string {
	for _, n := range t.Names {
		if n.Value == v {
			return n.Name
		}
	}
	return fmt.Sprintf("%s(%d)", strings.ReplaceAll(t.What, " ", "-"), any(v))
}

// Parse returns the value named s (a name or an alias; "" is Empty when
// set), or an error naming What, s and the names it could have been.
func (t *Table[T]) Parse(s string) (T, error) {
	key := s
	if s == "" {
		key = t.Empty
	}
	if t.Fold {
		key = strings.ToLower(key)
	}
	for _, n := range t.Names {
		if key == n.Name {
			return n.Value, nil
		}
		for _, a := range n.Aliases {
			if key == a {
				return n.Value, nil
			}
		}
	}
	var zero T
	return zero, fmt.Errorf("unknown %s %q (want %s)", t.What, s, t.List())
}

// Known reports whether v is one of the table's values.
func (t *Table[T]) Known(v T) bool {
	for _, n := range t.Names {
		if n.Value == v {
			return true
		}
	}
	return false
}

// List returns the names as prose: "a, b or c".
func (t *Table[T]) List() string {
	names := make([]string, len(t.Names))
	for i, n := range t.Names {
		names[i] = n.Name
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
