package edtbackend

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// Knobs are the edt backend's own settings, from a policy's `edt:`
// section.
type Knobs struct {
	// Sessions is the PDU sessions the program's maps have room for (two
	// flows and two marks each), fixed when the program is loaded: the
	// empty maps cost about 80 bytes an entry of room, a full one about
	// 340 bytes a session. 0: Options.Sessions.
	Sessions int
}

// maxSessions keeps the flows and marks maps (two entries a session)
// within edt.MaxEntries.
const maxSessions = edt.MaxEntries / 2

// knobKeys are the keys DecodeKnobs knows.
var knobKeys = map[string]func(k *Knobs, v string) error{
	"sessions": func(k *Knobs, v string) error {
		n, err := shaper.ParseUint(v, 32)
		if err != nil || n == 0 || n > maxSessions {
			return fmt.Errorf("sessions: %q: want a count of PDU sessions from 1 to %d", v, maxSessions)
		}
		k.Sessions = int(n)
		return nil
	},
}

// DecodeKnobs reads the edt section's knobs; an unknown key or a bad value
// is one line naming it.
func DecodeKnobs(in shaper.Knobs) (Knobs, error) {
	var k Knobs
	for _, key := range slices.Sorted(maps.Keys(in)) {
		set, ok := knobKeys[key]
		if !ok {
			return k, fmt.Errorf("unknown key %q (want %s)", key, strings.Join(slices.Sorted(maps.Keys(knobKeys)), ", "))
		}
		if err := set(&k, in[key]); err != nil {
			return k, err
		}
	}
	return k, nil
}

// The policy file refuses a bad edt knob as it reads the policy.
func init() {
	shaper.RegisterKnobs(Name, func(k shaper.Knobs) error {
		_, err := DecodeKnobs(k)
		return err
	})
}
