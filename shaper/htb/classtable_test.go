package htb

import (
	"slices"
	"testing"
)

func TestMinorTable(t *testing.T) {
	tab := newMinorTable[Class](0)
	for _, m := range []uint16{0x20, 1, 0x10, 0x20} {
		tab.set(m, Class{Minor: m, Rate: uint64(m)})
	}
	tab.del(0x10)
	tab.del(0x999) // not there: nothing happens
	if tab.len() != 2 {
		t.Fatalf("len %d, want 2", tab.len())
	}
	var minors []uint16
	for m, c := range tab.all() {
		if c.Minor != m {
			t.Errorf("minor %x holds class %x", m, c.Minor)
		}
		minors = append(minors, m)
	}
	if !slices.Equal(minors, []uint16{1, 0x20}) {
		t.Fatalf("classes in order %x, want [1 20]", minors)
	}
	if _, ok := tab.get(0x10); ok {
		t.Fatal("a deleted class is still there")
	}
	if c, ok := tab.get(0x20); !ok || c.Rate != 0x20 {
		t.Fatalf("get(0x20) = %+v, %v", c, ok)
	}
	if _, ok := tab.get(0xfffe); ok {
		t.Fatal("a minor past the table's end is there")
	}
	// Growing to the last minor keeps what is there and stops at the
	// 65,536 minors a tree has.
	tab.set(0xfffe, Class{Minor: 0xfffe})
	if c, ok := tab.get(0x20); !ok || c.Rate != 0x20 || tab.len() != 3 || cap(tab.at) > 1<<16 {
		t.Fatalf("after growing: get(0x20) = %+v, %v; len %d, room %d", c, ok, tab.len(), cap(tab.at))
	}
}
