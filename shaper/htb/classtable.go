package htb

import "iter"

// classTable holds a plan's classes by minor in one slice. Minors are
// handed out lowest free first, so the slice is about as long as the tree
// and a class costs its own size (120 bytes), where a map's slot and
// growth room cost about 220 (14 MB at 65k classes).
type classTable struct {
	at  []Class
	has []bool
	n   int
}

// newClassTable returns a table with room for classes up to minor max.
func newClassTable(max uint16) classTable {
	n := int(max) + 1
	return classTable{at: make([]Class, 0, n), has: make([]bool, 0, n)}
}

// get returns the class with minor m; the zero Class when there is none.
func (t *classTable) get(m uint16) (Class, bool) {
	if int(m) >= len(t.at) || !t.has[m] {
		return Class{}, false
	}
	return t.at[m], true
}

// set adds c, or replaces the class with its minor.
func (t *classTable) set(c Class) {
	m := int(c.Minor)
	if m >= len(t.at) {
		t.at = append(t.at, make([]Class, m+1-len(t.at))...)
		t.has = append(t.has, make([]bool, m+1-len(t.has))...)
	}
	if !t.has[m] {
		t.n++
	}
	t.at[m], t.has[m] = c, true
}

// del removes the class with minor m, if any.
func (t *classTable) del(m uint16) {
	if int(m) < len(t.at) && t.has[m] {
		t.at[m], t.has[m] = Class{}, false
		t.n--
	}
}

func (t *classTable) len() int { return t.n }

// all yields the classes in minor order.
func (t *classTable) all() iter.Seq[Class] {
	return func(yield func(Class) bool) {
		for m, ok := range t.has {
			if ok && !yield(t.at[m]) {
				return
			}
		}
	}
}
