package plan

import "iter"

// MinorTable holds values by class minor in one slice. Minors are handed
// out lowest free first, so the slice is about as long as the tree and an
// entry costs its own size: a map's slot and growth room cost about a
// hundred bytes more per class (over 6 MB at 65k classes, per table).
type MinorTable[T any] struct {
	at  []T
	has []bool
	n   int
}

// NewMinorTable returns a table with room for minors up to max.
func NewMinorTable[T any](max uint16) MinorTable[T] {
	n := int(max) + 1
	return MinorTable[T]{at: make([]T, 0, n), has: make([]bool, 0, n)}
}

// Get returns the value at minor m (the zero value when there is none).
func (t *MinorTable[T]) Get(m uint16) (T, bool) {
	if int(m) >= len(t.at) || !t.has[m] {
		var zero T
		return zero, false
	}
	return t.at[m], true
}

// Set puts v at minor m.
func (t *MinorTable[T]) Set(m uint16, v T) {
	if int(m) >= len(t.at) {
		t.grow(int(m) + 1)
	}
	if !t.has[m] {
		t.n++
	}
	t.at[m], t.has[m] = v, true
}

// grow makes the table n long, doubling its room when it must move (but
// never past the 65,536 minors a tree has: a full device's pool of spares
// grows the table by a few classes, and an append's growth would add a
// quarter of the tree).
func (t *MinorTable[T]) grow(n int) {
	if n > cap(t.at) {
		c := min(max(n, 2*cap(t.at)), 1<<16)
		t.at = append(make([]T, 0, c), t.at...)
		t.has = append(make([]bool, 0, c), t.has...)
	}
	t.at = t.at[:n]
	t.has = t.has[:n]
}

// Del removes minor m, if there.
func (t *MinorTable[T]) Del(m uint16) {
	if int(m) < len(t.at) && t.has[m] {
		var zero T
		t.at[m], t.has[m] = zero, false
		t.n--
	}
}

func (t *MinorTable[T]) Len() int { return t.n }

// All yields the minors and their values in minor order.
func (t *MinorTable[T]) All() iter.Seq2[uint16, T] {
	return func(yield func(uint16, T) bool) {
		for m, ok := range t.has {
			if ok && !yield(uint16(m), t.at[m]) {
				return
			}
		}
	}
}
