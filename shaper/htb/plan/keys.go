package plan

import (
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/spec"
)

// KeyCheck tells whether a flow class can be reached through the
// classifier that binds a tree's flows; the zero KeyCheck reaches all.
// The kept plan holds one, so an Update checks the flows it places, and
// only those.
type KeyCheck struct {
	KN   KeyNeeder
	Kind spec.Kind
}

// KeyNeeder is classify.KeyNeeder: a classifier that tells which key an
// entry lacks.
type KeyNeeder interface {
	// MissingKey returns the field the entry lacks ("mark", "teid"), or
	// "" when the classifier can bind it.
	MissingKey(e spec.Entry) string
}

// Problems returns the warnings for t's unreachable flow classes.
func (k KeyCheck) Problems(t *Tree) []shaper.Problem {
	if t == nil || k.KN == nil {
		return nil
	}
	var out []shaper.Problem
	for _, cl := range t.Classes {
		if p, ok := k.Unreachable(t.Major, cl); ok {
			out = append(out, p)
		}
	}
	return out
}

// Unreachable returns the warning for flow class cl of a tree with the
// given major when its flow lacks the classifier's key.
func (k KeyCheck) Unreachable(major uint16, cl Class) (shaper.Problem, bool) {
	if k.KN == nil || cl.Role != shaper.RoleFlow {
		return shaper.Problem{}, false
	}
	field := k.KN.MissingKey(cl.entry(major))
	if field == "" {
		return shaper.Problem{}, false
	}
	kept := fmt.Sprintf("its class keeps its rate %s", shaper.FormatRate(cl.Rate))
	if cl.GBR != 0 {
		kept = fmt.Sprintf("its GBR %s stays reserved", shaper.FormatRate(cl.GBR))
	}
	return shaper.Problem{Kind: shaper.Unreachable, Severity: shaper.Warning, Flow: cl.Flow,
		Name: shaper.Flow{ID: cl.Flow, Name: cl.Name}.Label(), Field: field,
		Detail: fmt.Sprintf("no %s: classifier %s binds by %s and cannot steer its packets into class %s, they go to the default class; %s",
			field, k.Kind, field, (&Tree{Major: major}).Handle(cl.Minor), kept)}, true
}
