package gtpu

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// dumpDownlink reads the kernel's dl_class map back.
func dumpDownlink(t *testing.T, o *Objects) map[Key]uint32 {
	t.Helper()
	got := map[Key]uint32{}
	var k gtpuFlowKey
	var v uint32
	it := o.objs.DlClass.Iterate()
	for it.Next(&k, &v) {
		got[Key{TEID: k.Teid, QFI: k.Qfi}] = v
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestSyncDownlinkIncremental(t *testing.T) {
	o := loadForTest(t)
	steps := []struct {
		want                    map[Key]uint32
		added, changed, deleted int
	}{
		{map[Key]uint32{{1, 2}: classA, {2, 2}: classB, {3, 4}: classDefault}, 3, 0, 0},
		{map[Key]uint32{{1, 2}: classA, {2, 2}: classB, {3, 4}: classDefault}, 0, 0, 0},
		{map[Key]uint32{{1, 2}: classA, {2, 2}: classQFIOnly, {5, 6}: classB}, 1, 1, 1},
		{map[Key]uint32{}, 0, 0, 3},
	}
	for i, s := range steps {
		res, err := o.SyncDownlink(s.want)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := [3]int{res.Added, res.Changed, res.Deleted}; got != [3]int{s.added, s.changed, s.deleted} {
			t.Errorf("step %d: added/changed/deleted %v, want %v", i, got, [3]int{s.added, s.changed, s.deleted})
		}
		if diff := cmp.Diff(s.want, dumpDownlink(t, o)); diff != "" {
			t.Errorf("step %d: kernel map differs (-want +got):\n%s", i, diff)
		}
	}
}

// A change must only rewrite the changed key: an entry written behind the
// mirror's back (standing in for a key the sync has no reason to touch)
// survives an unrelated update.
func TestSyncTouchesOnlyChangedKeys(t *testing.T) {
	o := loadForTest(t)
	if _, err := o.SyncDownlink(map[Key]uint32{{1, 2}: classA, {2, 2}: classB}); err != nil {
		t.Fatal(err)
	}
	if err := o.objs.DlClass.Put(Key{1, 2}.bpf(), uint32(0xdead)); err != nil {
		t.Fatal(err)
	}
	if _, err := o.SyncDownlink(map[Key]uint32{{1, 2}: classA, {2, 2}: classDefault}); err != nil {
		t.Fatal(err)
	}
	want := map[Key]uint32{{1, 2}: 0xdead, {2, 2}: classDefault}
	if diff := cmp.Diff(want, dumpDownlink(t, o)); diff != "" {
		t.Errorf("kernel map (-want +got):\n%s", diff)
	}
}

func TestSyncRejectsOverflow(t *testing.T) {
	o := loadForTest(t)
	want := make(map[Key]uint32, 70000)
	for i := 0; i < 70000; i++ {
		want[Key{TEID: uint32(i + 1), QFI: 1}] = 1
	}
	if _, err := o.SyncDownlink(want); err == nil {
		t.Fatal("sync of 70000 entries into a 65536-entry map succeeded")
	}
	if got := len(dumpDownlink(t, o)); got != 0 {
		t.Errorf("map holds %d entries after a refused sync, want 0", got)
	}
}
