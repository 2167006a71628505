package shaper

// Index finds the class (any value V standing for one) that serves a flow,
// the one way gtpqos matches flows to classes: by flow id where the class
// knows it (a planned class), else, for classes that know no flow id (read
// from the kernel), by mark, by (TEID, QFI), and by QFI alone (what a
// QFI-only GTP-U classifier binds). When two classes share a key, the one
// added first wins.
type Index[V any] struct {
	byID   map[FlowID]V
	byMark map[uint32]V
	byKey  map[Key]V
}

// NewIndex returns an empty index sized for n classes.
func NewIndex[V any](n int) *Index[V] {
	// Only byID is sized: a tree holds flow ids (a plan's) or keys alone
	// (the kernel's), and sizing all three would allocate twice the room
	// never used.
	return &Index[V]{byID: make(map[FlowID]V, n), byMark: map[uint32]V{}, byKey: map[Key]V{}}
}

// Add indexes v, the class of flow id (zero: unknown) bound by key k.
func (ix *Index[V]) Add(id FlowID, k Key, v V) {
	if id != (FlowID{}) {
		if _, dup := ix.byID[id]; !dup {
			ix.byID[id] = v
		}
		return
	}
	if _, dup := ix.byMark[k.Mark]; k.Mark != 0 && !dup {
		ix.byMark[k.Mark] = v
	}
	tq := Key{TEID: k.TEID, QFI: k.QFI}
	if _, dup := ix.byKey[tq]; (k.TEID != 0 || k.QFI != 0) && !dup {
		ix.byKey[tq] = v
	}
}

// Find returns the class of flow f.
func (ix *Index[V]) Find(f *Flow) (V, bool) {
	if v, ok := ix.byID[f.ID]; ok {
		return v, true
	}
	if f.Mark != 0 {
		if v, ok := ix.byMark[f.Mark]; ok {
			return v, true
		}
	}
	if f.TEID != 0 {
		if v, ok := ix.byKey[Key{TEID: f.TEID, QFI: f.QFI}]; ok {
			return v, true
		}
	}
	v, ok := ix.byKey[Key{QFI: f.QFI}]
	return v, ok
}
