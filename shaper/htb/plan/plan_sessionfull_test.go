package plan

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

// A device whose class ids run out refuses a whole session in one line
// naming it: its AMBR class and the flows under it need one id each.
func TestPlanSessionOutOfClassIDs(t *testing.T) {
	pol := DefaultPolicy(10_000_000_000)
	pol.NonGBRMin, pol.DefaultRate, pol.Pool = 1000, 1000, 0
	var flows []shaper.Flow
	for i := 0; i < MaxClasses; i++ { // every id taken by a flow under the link
		flows = append(flows, shaper.Flow{ID: shaper.FlowID{SEID: 1, QERID: uint32(i + 1)}, Direction: shaper.Downlink, MBR: 1_000_000})
	}
	for q := uint32(1); q <= 2; q++ { // a session: default flow and one non-GBR flow
		flows = append(flows, shaper.Flow{ID: shaper.FlowID{SEID: 7, QERID: q}, Direction: shaper.Downlink, SessionAMBR: 5_000_000})
	}
	_, probs := Plan(flows, pol, nil)
	var lines []string
	for _, p := range probs {
		if p.Kind == shaper.TooManyFlows {
			lines = append(lines, p.Detail)
		}
	}
	// The link flows took every id but the session class's: one line per
	// refused link flow, one for the session.
	if len(lines) != 2 || !strings.Contains(lines[1], "session seid=7: 2 of its 2 flows refused") {
		t.Fatalf("out of class ids: %q; want one link flow refused and one line for session seid=7's 2 flows", lines)
	}
}
