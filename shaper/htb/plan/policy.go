package plan

import (
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
)

// Policy is a policy as the HTB backend plans with it: the contract-level
// settings every backend honours and HTB's own knobs, decoded.
type Policy struct {
	shaper.Policy
	Knobs
}

// DefaultPolicy is shaper.DefaultPolicy(linkRate) with DefaultKnobs.
func DefaultPolicy(linkRate uint64) Policy {
	return Policy{Policy: shaper.DefaultPolicy(linkRate), Knobs: DefaultKnobs()}
}

// PolicyOf decodes pol's HTB knobs over DefaultKnobs; an error is one line
// naming the key at fault.
func PolicyOf(pol shaper.Policy) (Policy, error) {
	k, err := DecodeKnobs(pol.BackendKnobs.Of(Name), DefaultKnobs())
	if err != nil {
		return Policy{}, fmt.Errorf("policy: %s: %w", Name, err)
	}
	return Policy{Policy: pol, Knobs: k}, nil
}

// Shaper returns p as a shaper.Policy, its knobs spelt out under htb's key
// (what Backend.Apply takes).
func (p Policy) Shaper() shaper.Policy {
	pol := p.Policy
	pol.BackendKnobs = pol.BackendKnobs.With(Name, p.Knobs.Encode())
	return pol
}
