package backends

import (
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
)

// Check checks, before anything is opened or written, that the backend
// o names can enforce pol as o would open it (a policy whose classifier
// needs marks where packets carry none, and the like); the error is one
// line naming what is at fault. binding says, in a few words, how the
// backend will find each packet's flow ("classifier bpf by mark").
func Check(pol shaper.Policy, o Options) (binding string, err error) {
	name := o.Backend
	if name == "" {
		name = pol.Backend
	}
	b, err := lookup(name)
	if err != nil || b.check == nil {
		return "", err
	}
	return b.check(pol, o)
}

// KeepBinding returns next with running's knobs that say how packets are
// bound to their classes (HTB: the classifier): a running daemon's
// classification mode is its own, not a re-read file's. Both policies
// must name the same backend; if they do not, next is returned as is.
func KeepBinding(running, next shaper.Policy) shaper.Policy {
	b, err := lookup(next.Backend)
	if err != nil || running.Backend != next.Backend || b.keep == nil {
		return next
	}
	return b.keep(running, next)
}

// Override returns pol with its backend's knobs set from k ("" values are
// skipped), as a policy file would set them; the error names the key at
// fault ("classifier: unknown classifier ...").
func Override(pol shaper.Policy, k shaper.Knobs) (shaper.Policy, error) {
	b, err := lookup(pol.Backend)
	if err != nil {
		return pol, err
	}
	set := shaper.Knobs{}
	for key, v := range k {
		if v != "" {
			set[key] = v
		}
	}
	if len(set) == 0 {
		return pol, nil
	}
	if b.override == nil {
		return pol, fmt.Errorf("backend %s has no knobs to set (%s)", b.name, shaper.KnobSet{}.With(b.name, set))
	}
	return b.override(pol, set)
}
