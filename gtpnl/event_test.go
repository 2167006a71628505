package gtpnl

import "testing"

// An event's op prints by name in logs, and by number when gtp5g sends one
// this version does not know.
func TestEventOpString(t *testing.T) {
	for op, want := range map[EventOp]string{EventAdd: "add", EventUpdate: "update", EventDelete: "delete", 9: "op(9)"} {
		if got := op.String(); got != want {
			t.Errorf("EventOp(%d).String() = %q, want %q", uint8(op), got, want)
		}
	}
}
