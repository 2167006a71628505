package plan

import (
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/spec"
)

func mustPlan(t testing.TB, flows []shaper.Flow, pol Policy, prev *Tree) *Tree {
	t.Helper()
	tree, probs := Plan(flows, pol, prev)
	if p, bad := shaper.FirstError(probs); bad {
		t.Fatalf("plan: %v", p)
	}
	return tree
}

// markKeys binds by mark, as the mark classifiers do (classify.Fw's
// MissingKey), without a kernel.
type markKeys struct{}

func (markKeys) MissingKey(e spec.Entry) string {
	if e.Mark == 0 {
		return "mark"
	}
	return ""
}

// markCheck is the key check a plan bound by fw makes.
func markCheck() KeyCheck { return KeyCheck{KN: markKeys{}, Kind: spec.KindFw} }

// header is t without its classes.
func header(t *Tree) *Tree {
	c := *t
	c.Classes = nil
	return &c
}

// updateFlow is flow qer of session seid with a GBR of gbr Mbit/s (0:
// non-GBR) and an optional session AMBR.
func updateFlow(seid uint64, qer uint32, gbr, ambr uint64) shaper.Flow {
	return shaper.Flow{ID: shaper.FlowID{SEID: seid, QERID: qer}, QFI: uint8(qer), Direction: shaper.Downlink,
		GBR: gbr * mbit, MBR: (gbr + 5) * mbit, SessionAMBR: ambr * mbit, Mark: uint32(seid<<8 | uint64(qer))}
}
