package gtpu

import (
	"testing"

	"github.com/free5gc/gtpqos/shaper"
)

// TestMarkProgramIgnoresHighBits checks that mark_egress looks up only the
// gtp5g patch's mark field (shaper.MarkMask): bits 24-31, such as gtp5g's
// framed-route bit 31, do not change the class.
func TestMarkProgramIgnoresHighBits(t *testing.T) {
	o := loadForTest(t)
	if _, err := o.SyncMarkClasses(map[uint32]uint32{0x105: classA}); err != nil {
		t.Fatal(err)
	}
	data := pkt{ipProto: 6}.build()
	for _, tc := range []struct {
		mark          uint32
		verdict, prio uint32
	}{
		{0x80000105, actOK, classA},
		{0xFF000105, actOK, classA},
		{0x01000105 &^ shaper.MarkMask, actUnspec, presetPrio}, // mark field 0: no mark
	} {
		verdict, out := run(t, o.MarkProgram(), data, newCtx(tc.mark, presetPrio), 1)
		if verdict != tc.verdict || out.priority() != tc.prio {
			t.Errorf("mark %#x: verdict %#x priority %#x, want %#x and %#x", tc.mark, verdict, out.priority(), tc.verdict, tc.prio)
		}
	}
}
