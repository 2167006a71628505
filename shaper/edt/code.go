package edt

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
)

// Code is a fingerprint of the program's instructions: the first 8 bytes
// of the SHA-256 of the embedded object's instructions (map references
// unresolved, so the same object gives the same code wherever it is
// loaded; comments and debug info do not count). Load stores it in the
// config map, so that a gtpqos that adopts a pinned program can tell
// whether that program does this gtpqos's arithmetic or an older one's,
// whose maps may look the same.
type Code [2]uint32

// ownCode is the fingerprint of the program this gtpqos embeds.
var ownCode = sync.OnceValues(func() (Code, error) {
	spec, err := loadEdt()
	if err != nil {
		return Code{}, fmt.Errorf("edt: %w", err)
	}
	h := sha256.New()
	if err := spec.Programs[edtProgEdtEgress].Instructions.Marshal(h, binary.LittleEndian); err != nil {
		return Code{}, fmt.Errorf("edt: fingerprint the program: %w", err)
	}
	sum := h.Sum(nil)
	return Code{binary.BigEndian.Uint32(sum), binary.BigEndian.Uint32(sum[4:])}, nil
})

// OwnCode reports whether the program runs this gtpqos's instructions:
// false for one pinned by a gtpqos whose program differs (or that stored
// no fingerprint), which a backend replaces.
func (p *Pacer) OwnCode() bool {
	c, err := ownCode()
	return err == nil && c == p.opts.code
}
