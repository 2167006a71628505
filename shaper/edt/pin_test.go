package edt

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// A pinned pacer opens in another handle with the same maps and program,
// its options read back; it outlives the loader's handles; Unpin removes
// its pins and leaves no directory behind.
func TestPinOpenUnpin(t *testing.T) {
	testenv.RequireRoot(t)
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "bpf", "bpf", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount bpffs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	classify.SetPinRoot(filepath.Join(mnt, "gtpqos"))
	t.Cleanup(func() { classify.SetPinRoot("") })
	pins, err := classify.DevicePins("edt0")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := OpenPinned(pins); ok || err != nil {
		t.Fatalf("OpenPinned with no pins: %v, %v", ok, err)
	}
	opts := testOptions()
	opts.Sessions, opts.Burst, opts.FlowAhead = 77, 4000, 50
	p := loadForTest(t, opts)
	if err := p.AddFlow(1, FlowSpec{Marks: []uint32{1}, MBR: 1e6, DelayBudget: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := p.Pin(pins); err != nil {
		t.Fatal(err)
	}
	p.Close()

	q, ok, err := OpenPinned(pins)
	if err != nil || !ok {
		t.Fatalf("OpenPinned: %v, %v", ok, err)
	}
	defer q.Close()
	if o := q.Options(); o.Sessions != 77 || o.Flows != opts.Flows || o.Preallocate || o.Overhead != testOverhead || o.Burst != 4000 || o.FlowAhead != 50 {
		t.Errorf("options read back %+v, want sessions 77, flows %d, no prealloc, overhead %d, burst 4000, 50 ahead", o, opts.Flows, testOverhead)
	}
	if _, out := runCtx(t, q, newCtx(1, 0), frame(1000)); out.cb(1) != 1 {
		t.Errorf("pinned program did not find flow 1 (cb %d)", out.cb(1))
	}
	if st, err := q.Flow(1); err != nil || st.Packets != 1 || st.Bytes != 1000 {
		t.Errorf("flow 1 through the pins: %+v, %v", st, err)
	}
	if !q.Current() || q.Options().Keys != opts.Keys || q.Options().Rules != opts.Rules || q.Options().L3 {
		t.Errorf("current %v, options %+v; want the keys map of %d, the rules map of %d, Ethernet", q.Current(), q.Options(), opts.Keys, opts.Rules)
	}
	if !q.OwnCode() {
		t.Error("a program pinned by this gtpqos does not count as its own (OwnCode false)")
	}
	// A program of other instructions (an older gtpqos's: its config
	// holds another fingerprint, or none) opens with the same maps, for
	// its backend to replace.
	if err := q.objs.Config.Put(uint32(0), edtEdtConfig{Overhead: testOverhead, L2Len: 14, Code: Code{1, 2}}); err != nil {
		t.Fatal(err)
	}
	other, ok, err := OpenPinned(pins)
	if err != nil || !ok || other.OwnCode() || !other.Current() {
		t.Fatalf("OpenPinned with another program's fingerprint: %v, %v; want it open, current, and not this gtpqos's code", ok, err)
	}
	other.Close()
	// A program pinned without the SDF rule map (an older gtpqos) opens
	// by mark and (TEID, QFI), for its backend to replace.
	if err := pins.Remove(pinRules); err != nil {
		t.Fatal(err)
	}
	noRules, ok, err := OpenPinned(pins)
	if err != nil || !ok || noRules.Current() || noRules.Options().Keys != opts.Keys {
		t.Fatalf("OpenPinned without the rules map: %v, %v, current %v", ok, err, noRules != nil && noRules.Current())
	}
	if err := noRules.SetRules(1, Rules{}); err == nil {
		t.Error("rules were written to a program without the rules map")
	}
	noRules.Close()
	// A program pinned without the (TEID, QFI) maps (an older gtpqos)
	// opens by mark only, for its backend to replace.
	if err := pins.Remove(pinTeids, pinFrags); err != nil {
		t.Fatal(err)
	}
	old, ok, err := OpenPinned(pins)
	if err != nil || !ok || old.Current() {
		t.Fatalf("OpenPinned without the keys maps: %v, %v, current %v", ok, err, old != nil && old.Current())
	}
	if err := old.AddFlow(9, FlowSpec{Keys: []Key{{TEID: 1, QFI: 1}}, DelayBudget: time.Hour}); err == nil {
		t.Error("a keyed flow was added to a program without the keys map")
	}
	if fs, err := old.ReadFlows(); err != nil || len(fs) != 1 {
		t.Errorf("flows by mark: %v, %v", fs, err)
	}
	old.Close()
	if err := Unpin(pins); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := OpenPinned(pins); ok || err != nil {
		t.Errorf("OpenPinned after Unpin: %v, %v", ok, err)
	}
	if m, _ := filepath.Glob(filepath.Join(mnt, "gtpqos", "*", "*")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
}
