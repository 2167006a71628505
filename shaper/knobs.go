package shaper

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Knobs are one backend's own settings as a policy file spells them
// under the backend's key (`htb: {burst: 32k}`): key -> value in tc's
// notation. The model keeps them uninterpreted; the backend of that name
// decodes and checks them.
type Knobs map[string]string

// KnobSet holds the Knobs of every backend a policy gives settings for, by
// backend name. It is a value (comparable, so Policies compare with ==):
// With returns a new set, and the zero KnobSet holds none.
type KnobSet struct {
	// enc is the canonical JSON of map[backend]Knobs ("" when empty):
	// encoding/json sorts map keys, so equal sets encode alike.
	enc string
}

// Of returns the knobs given for backend (nil: none).
func (s KnobSet) Of(backend string) Knobs {
	return s.all()[backend]
}

// Backends lists the backends the set holds knobs for, sorted.
func (s KnobSet) Backends() []string {
	return slices.Sorted(maps.Keys(s.all()))
}

// With returns the set with backend's knobs replaced by k (none: removed).
func (s KnobSet) With(backend string, k Knobs) KnobSet {
	all := s.all()
	if all == nil {
		all = map[string]Knobs{}
	}
	if len(k) == 0 {
		delete(all, backend)
	} else {
		all[backend] = maps.Clone(k)
	}
	if len(all) == 0 {
		return KnobSet{}
	}
	b, _ := json.Marshal(all) // maps of strings always encode
	return KnobSet{enc: string(b)}
}

// all decodes the set; the encoding is the set's own, so it never fails.
func (s KnobSet) all() map[string]Knobs {
	if s.enc == "" {
		return nil
	}
	var all map[string]Knobs
	_ = json.Unmarshal([]byte(s.enc), &all)
	return all
}

// String lists the knobs as "backend.key=value" in key order (for
// messages and tests).
func (s KnobSet) String() string {
	var parts []string
	for _, b := range s.Backends() {
		k := s.Of(b)
		for _, key := range slices.Sorted(maps.Keys(k)) {
			parts = append(parts, fmt.Sprintf("%s.%s=%s", b, key, k[key]))
		}
	}
	return strings.Join(parts, " ")
}

// knobCheckers are the backends' checks of their knobs, by backend name
// (RegisterKnobs).
var knobCheckers sync.Map

// RegisterKnobs registers backend's check of its knobs: reading a policy
// section (PolicyYAML.Apply) then refuses a bad knob at once, with one
// line naming it, instead of at the first apply. A backend package calls
// it from init. check's errors name the key ("burst: invalid size").
func RegisterKnobs(backend string, check func(Knobs) error) {
	knobCheckers.Store(backend, check)
}

// CheckKnobs runs the registered check of each backend pol holds knobs
// for; an error is one line starting with the backend's key.
func CheckKnobs(s KnobSet) error {
	for _, b := range s.Backends() {
		if c, ok := knobCheckers.Load(b); ok {
			if err := c.(func(Knobs) error)(s.Of(b)); err != nil {
				return fmt.Errorf("%s: %w", b, err)
			}
		}
	}
	return nil
}

// Equal reports whether s and o hold the same knobs (for go-cmp, which
// does not look inside the set).
func (s KnobSet) Equal(o KnobSet) bool { return s == o }
