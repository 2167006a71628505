package ab

import (
	"slices"
	"strings"

	"github.com/free5gc/gtpqos/shaper/backends"
)

// ParseBackends parses --backend: one backend or a comma-separated list of
// distinct ones ("htb,edt"); "" asks for none (the arms' own).
func ParseBackends(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(backends.Names(), n) {
			return nil, usagef("--backend %q: unknown backend %q (known: %s)", s, n, strings.Join(backends.Names(), ", "))
		}
		if slices.Contains(out, n) {
			return nil, usagef("--backend %q: backend %s given twice", s, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// WithBackends runs the arms under the named backends. One backend sets
// every arm's; more make each arm one arm per backend, side by side in
// the order given and named ARM/BACKEND, so that every run of an arm
// compares the backends under the same load.
func WithBackends(arms []Arm, names []string) []Arm {
	if len(names) == 0 {
		return arms
	}
	var out []Arm
	for _, a := range arms {
		for _, n := range names {
			b := a
			b.Policy.Backend, b.Backend = n, n
			if len(names) > 1 {
				b.Name = a.Name + "/" + n
			}
			out = append(out, b)
		}
	}
	return out
}

// armBackend is the backend that enforces the arm.
func armBackend(a Arm) string { return or(a.Policy.Backend, backends.Default) }
