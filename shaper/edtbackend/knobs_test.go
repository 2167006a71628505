package edtbackend

import (
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// A policy file's edt section sizes the maps; a bad or unknown knob is one
// line naming it, refused as the file is read.
func TestEdtKnobsFromAPolicyFile(t *testing.T) {
	ff, err := shaper.ParseFlowsFile("f.yaml", []byte("link: 1gbit\npolicy:\n  backend: edt\n  edt:\n    sessions: 1000000\nflows: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := MakePlan(nil, ff.Policy); p.Room != 1_000_000 {
		t.Errorf("plan's room %d, want 1000000", p.Room)
	}
	for in, want := range map[string]string{
		"sessions: 0":      `edt: sessions: "0": want a count of PDU sessions from 1 to 33554432`,
		"sessions: lots":   `edt: sessions: "lots": want a count of PDU sessions from 1 to 33554432`,
		"burst: 32k":       `edt: unknown key "burst" (want sessions)`,
		"sessions: 1 << 2": `edt: sessions: "1 << 2": want a count of PDU sessions from 1 to 33554432`,
	} {
		_, err := shaper.ParseFlowsFile("f.yaml", []byte("link: 1gbit\npolicy:\n  edt:\n    "+in+"\nflows: []\n"))
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("edt: {%s}: %v\nwant ...%s", in, err, want)
		}
	}
}

// A plan that does not fit the maps is refused naming the map, the room
// and the knob that sizes it.
func TestFitsNamesTheFullMap(t *testing.T) {
	p := MakePlan(testFlows(), shaper.DefaultPolicy(20e6))
	if err := fits(p, edt.LoadOptions{Sessions: 4, Flows: 8, Marks: 8}); err != nil {
		t.Errorf("3 flows in maps for 4 sessions: %v", err)
	}
	err := fits(p, edt.LoadOptions{Sessions: 1, Flows: 2, Marks: 2})
	want := "edt: 3 flows do not fit in the program's flows map (room for 2, sized for 1 sessions): give the policy `edt: {sessions: N}` with room for them"
	if err == nil || err.Error() != want {
		t.Errorf("3 flows in maps for 1 session: %v\nwant %s", err, want)
	}
}

// A pinned program is adopted only when it paces as this gtpqos would: an
// older one (no idle credit, no bound on packets ahead, or flows by mark
// only), one for another
// overhead or link layer, or one with less room is replaced.
func TestReusablePinnedProgram(t *testing.T) {
	p := &Plan{Overhead: 58, Room: 100}
	good := edt.LoadOptions{Sessions: 100, Overhead: 58, Burst: edt.DefaultBurst, FlowAhead: edt.DefaultFlowAhead}
	if !reusable(good, true, p, false) {
		t.Fatalf("a program loaded as this gtpqos loads it (%+v) is not reused", good)
	}
	for name, o := range map[string]edt.LoadOptions{
		"no idle credit":  {Sessions: 100, Overhead: 58, FlowAhead: edt.DefaultFlowAhead},
		"no ahead bound":  {Sessions: 100, Overhead: 58, Burst: edt.DefaultBurst},
		"other overhead":  {Sessions: 100, Overhead: 14, Burst: edt.DefaultBurst, FlowAhead: edt.DefaultFlowAhead},
		"less room":       {Sessions: 99, Overhead: 58, Burst: edt.DefaultBurst, FlowAhead: edt.DefaultFlowAhead},
		"other L2 (none)": {Sessions: 100, Overhead: 58, Burst: edt.DefaultBurst, FlowAhead: edt.DefaultFlowAhead, L3: true},
	} {
		if reusable(o, true, p, false) {
			t.Errorf("%s: %+v reused", name, o)
		}
	}
	if reusable(good, false, p, false) {
		t.Error("a program that finds flows by mark only is reused")
	}
}
