package shaper

import "testing"

// TestIndexFind checks the matching order: flow id for planned classes,
// then, for classes read from the kernel, mark, (TEID, QFI), and QFI alone;
// the first class added wins a shared key.
func TestIndexFind(t *testing.T) {
	ix := NewIndex[string](8)
	ix.Add(FlowID{SEID: 1, QERID: 1}, Key{Mark: 0x21}, "planned")
	ix.Add(FlowID{}, Key{Mark: 0x22}, "mark")
	ix.Add(FlowID{}, Key{Mark: 0x22}, "mark-dup")
	ix.Add(FlowID{}, Key{TEID: 100, QFI: 2}, "teid")
	ix.Add(FlowID{}, Key{QFI: 5}, "qfi-only")
	for _, tc := range []struct {
		f    Flow
		want string
		ok   bool
	}{
		{Flow{ID: FlowID{SEID: 1, QERID: 1}}, "planned", true},
		{Flow{ID: FlowID{SEID: 9, QERID: 9}, Mark: 0x21}, "", false}, // a planned class is found by id only
		{Flow{Mark: 0x22}, "mark", true},
		{Flow{Mark: 0x99, TEID: 100, QFI: 2}, "teid", true},
		{Flow{TEID: 101, QFI: 5}, "qfi-only", true},
		{Flow{QFI: 5}, "qfi-only", true},
		{Flow{TEID: 101, QFI: 3}, "", false},
	} {
		got, ok := ix.Find(&tc.f)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Find(%+v) = %q, %v; want %q, %v", tc.f, got, ok, tc.want, tc.ok)
		}
	}
}
