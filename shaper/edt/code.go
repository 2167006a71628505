package edt

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"
)

// Code is a fingerprint of the program's instructions: the kernel's
// program tag (a hash of them, map references left out) computed from the
// embedded object. Load stores it in the config map, so that a gtpqos that
// adopts a pinned program can tell whether that program does this
// gtpqos's arithmetic or an older one's, whose maps may look the same.
type Code [2]uint32

// ownCode is the fingerprint of the program this gtpqos embeds.
var ownCode = sync.OnceValues(func() (Code, error) {
	spec, err := loadEdt()
	if err != nil {
		return Code{}, fmt.Errorf("edt: %w", err)
	}
	tag, err := spec.Programs[edtProgEdtEgress].Tag()
	if err != nil {
		return Code{}, fmt.Errorf("edt: program tag: %w", err)
	}
	b, err := hex.DecodeString(tag)
	if err != nil || len(b) != 8 {
		return Code{}, fmt.Errorf("edt: program tag %q is not 8 bytes of hex", tag)
	}
	return Code{binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])}, nil
})

// OwnCode reports whether the program runs this gtpqos's instructions:
// false for one pinned by a gtpqos whose program differs (or that stored
// no fingerprint), which a backend replaces.
func (p *Pacer) OwnCode() bool {
	c, err := ownCode()
	return err == nil && c == p.opts.code
}
