package plan

import (
	"slices"
	"testing"
)

func TestMinorTable(t *testing.T) {
	tab := NewMinorTable[Class](0)
	for _, m := range []uint16{0x20, 1, 0x10, 0x20} {
		tab.Set(m, Class{Minor: m, Rate: uint64(m)})
	}
	tab.Del(0x10)
	tab.Del(0x999) // not there: nothing happens
	if tab.Len() != 2 {
		t.Fatalf("len %d, want 2", tab.Len())
	}
	var minors []uint16
	for m, c := range tab.All() {
		if c.Minor != m {
			t.Errorf("minor %x holds class %x", m, c.Minor)
		}
		minors = append(minors, m)
	}
	if !slices.Equal(minors, []uint16{1, 0x20}) {
		t.Fatalf("classes in order %x, want [1 20]", minors)
	}
	if _, ok := tab.Get(0x10); ok {
		t.Fatal("a deleted class is still there")
	}
	if c, ok := tab.Get(0x20); !ok || c.Rate != 0x20 {
		t.Fatalf("get(0x20) = %+v, %v", c, ok)
	}
	if _, ok := tab.Get(0xfffe); ok {
		t.Fatal("a minor past the table's end is there")
	}
	// Growing to the last minor keeps what is there and stops at the
	// 65,536 minors a tree has.
	tab.Set(0xfffe, Class{Minor: 0xfffe})
	if c, ok := tab.Get(0x20); !ok || c.Rate != 0x20 || tab.Len() != 3 || cap(tab.at) > 1<<16 {
		t.Fatalf("after growing: get(0x20) = %+v, %v; len %d, room %d", c, ok, tab.Len(), cap(tab.at))
	}
}
