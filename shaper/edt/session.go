package edt

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// AddSession writes PDU session id (not 0) with its AMBR in bit/s of the
// user's IP packets (0: no AMBR clock). An id in use is an error.
func (p *Pacer) AddSession(id uint32, ambr uint64) error {
	if id == 0 {
		return errors.New("edt: session id 0 is reserved for flows without a session")
	}
	v := p.sessionValue(ambr)
	if err := p.objs.Sessions.Update(id, &v, ebpf.UpdateNoExist); err != nil {
		if errors.Is(err, ebpf.ErrKeyExist) {
			return fmt.Errorf("edt: session %d exists", id)
		}
		return fmt.Errorf("edt: map sessions: add session %d: %w", id, mapFull(err))
	}
	return nil
}

// RemoveSession deletes session id; a session already gone is not an
// error. Flows still naming it pace by their own clocks alone until they
// go (the program counts their packets as NoSession).
func (p *Pacer) RemoveSession(id uint32) error {
	if err := p.objs.Sessions.Delete(id); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("edt: map sessions: delete session %d: %w", id, err)
	}
	return nil
}

// SessionClock reads session id's AMBR clock (CLOCK_MONOTONIC ns).
func (p *Pacer) SessionClock(id uint32) (uint64, error) {
	var v edtSession
	if err := p.objs.Sessions.LookupWithFlags(id, &v, ebpf.LookupLock); err != nil {
		return 0, fmt.Errorf("edt: map sessions: read session %d: %w", id, err)
	}
	return v.Clock, nil
}

// sessionValue is the map value of a session with AMBR ambr, its clock
// zero and its idle credit the program's burst at the AMBR.
func (p *Pacer) sessionValue(ambr uint64) edtSession {
	return edtSession{AmbrBps: ambr, CreditNs: creditNs(p.opts.Burst, ambr)}
}
