package backends

import (
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

type fakeTaker struct{ got [][]shaper.SessionRules }

func (f *fakeTaker) SetSDF(rules []shaper.SessionRules) ([]string, error) {
	f.got = append(f.got, rules)
	return []string{"noted"}, nil
}

// An edt backend on N3 gets the SDF rules Shared holds when it registers
// and every later SetSDF's; one registered again for its device replaces
// the first.
func TestSharedHandsSDFToEDT(t *testing.T) {
	s := NewShared("n3")
	rules := []shaper.SessionRules{{Direction: shaper.Downlink, TEID: 100, SEID: 1}}
	if _, err := s.SetSDF(rules); err != nil {
		t.Fatal(err)
	}
	a, b := &fakeTaker{}, &fakeTaker{}
	s.takeSDF("n3", a)
	if len(a.got) != 1 || len(a.got[0]) != 1 || a.got[0][0].TEID != 100 {
		t.Fatalf("at registration: %v, want the rules held", a.got)
	}
	s.takeSDF("n3", b)
	notes, err := s.SetSDF(nil)
	if err != nil || len(a.got) != 1 || len(b.got) != 2 || b.got[1] != nil {
		t.Errorf("SetSDF after a second registration: %v; first %v, second %v", err, a.got, b.got)
	}
	if len(notes) != 1 || notes[0] != "dev n3: noted" {
		t.Errorf("notes %q, want the backend's, naming its device", notes)
	}
}
