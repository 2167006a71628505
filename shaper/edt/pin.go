package edt

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/free5gc/gtpqos/shaper/classify"
)

// Pin names in a device's pin directory (classify.DevicePins), apart from
// the classifiers' names there. Pins let a process that did not load the
// pacer (a restarted daemon) open it with the pins' file permissions, not
// CAP_SYS_ADMIN.
const (
	PinProgram  = "gtpqos_edt"
	pinMarks    = "gtpqos_edt_marks"
	pinFlows    = "gtpqos_edt_flows"
	pinSessions = "gtpqos_edt_sessions"
	pinConfig   = "gtpqos_edt_config"
	pinStats    = "gtpqos_edt_stats"
	pinTeids    = "gtpqos_edt_teids"
	pinFrags    = "gtpqos_edt_frags"
	pinRules    = "gtpqos_edt_rules"
)

// mapPins pairs each map's pin name with its slot in objs.
func (p *Pacer) mapPins() []struct {
	name string
	m    **ebpf.Map
} {
	return []struct {
		name string
		m    **ebpf.Map
	}{
		{pinMarks, &p.objs.Marks}, {pinFlows, &p.objs.Flows}, {pinSessions, &p.objs.Sessions},
		{pinConfig, &p.objs.Config}, {pinStats, &p.objs.Stats},
		{pinTeids, &p.objs.Teids}, {pinFrags, &p.objs.Frags}, {pinRules, &p.objs.Rules},
	}
}

// Pin pins the maps, then the program: a reader that finds the program's
// pin finds its maps'. Each pin replaces an older one in one rename.
func (p *Pacer) Pin(pins classify.Pins) error {
	for _, mp := range p.mapPins() {
		if err := pins.Replace(mp.name, (*mp.m).FD()); err != nil {
			return fmt.Errorf("edt: %w", err)
		}
	}
	if err := pins.Replace(PinProgram, p.objs.EdtEgress.FD()); err != nil {
		return fmt.Errorf("edt: %w", err)
	}
	return nil
}

// Unpin removes the pacer's pins of the device (only those).
func Unpin(pins classify.Pins) error {
	if err := pins.Remove(PinProgram, pinMarks, pinFlows, pinSessions, pinConfig, pinStats, pinTeids, pinFrags, pinRules); err != nil {
		return fmt.Errorf("edt: %w", err)
	}
	return nil
}

// OpenPinned opens a pinned pacer; ok is false (and err nil) when the
// device has no pinned program. Its Options come from the maps.
func OpenPinned(pins classify.Pins) (p *Pacer, ok bool, err error) {
	path, ok, err := pins.Lookup(PinProgram)
	if err != nil || !ok {
		return nil, false, err
	}
	q := &Pacer{}
	defer func() {
		if err != nil {
			q.Close() // what was opened before the failure
		}
	}()
	p = q
	if p.objs.EdtEgress, err = ebpf.LoadPinnedProgram(path, nil); err != nil {
		return nil, false, fmt.Errorf("edt: open pinned program %s: %w", path, err)
	}
	for _, mp := range p.mapPins() {
		mpath, ok, err := pins.Lookup(mp.name)
		if err != nil {
			return nil, false, fmt.Errorf("edt: %w", err)
		}
		if !ok && (mp.name == pinTeids || mp.name == pinFrags) {
			// Pinned by a gtpqos that found flows by mark only.
			p.opts.noKeys = true
			continue
		}
		if !ok && mp.name == pinRules {
			// Pinned by a gtpqos that found unmarked flows by (TEID, QFI) only.
			p.opts.noRules = true
			continue
		}
		if !ok {
			return nil, false, fmt.Errorf("edt: pinned program %s without its map %s", path, pins.Path(mp.name))
		}
		if *mp.m, err = ebpf.LoadPinnedMap(mpath, nil); err != nil {
			return nil, false, fmt.Errorf("edt: open pinned map %s: %w", mpath, err)
		}
	}
	cfg, hasL2, err := pinnedConfig(p.objs.Config)
	if err != nil {
		return nil, false, err
	}
	p.opts = LoadOptions{
		Sessions:    int(p.objs.Sessions.MaxEntries()),
		Flows:       int(p.objs.Flows.MaxEntries()),
		Marks:       int(p.objs.Marks.MaxEntries()),
		Preallocate: p.objs.Flows.Flags()&noPrealloc == 0,
		Overhead:    cfg.Overhead,
		L3:          hasL2 && cfg.L2Len == 0,
		Burst:       cfg.Burst,
		FlowAhead:   cfg.FlowAhead,
		noKeys:      p.opts.noKeys,
		noRules:     p.opts.noRules,
		code:        cfg.Code,
	}
	if p.objs.Teids != nil {
		p.opts.Keys = int(p.objs.Teids.MaxEntries())
	}
	if p.objs.Rules != nil {
		p.opts.Rules = int(p.objs.Rules.MaxEntries())
	}
	return p, true, nil
}

// pinnedConfig reads a pinned program's config. An older program's is
// shorter (default class, overhead): the value is read whole and the
// fields it has are taken; hasL2 says it has l2_len.
func pinnedConfig(m *ebpf.Map) (cfg edtEdtConfig, hasL2 bool, err error) {
	raw := make([]byte, m.ValueSize())
	if err := m.Lookup(uint32(0), &raw); err != nil {
		return cfg, false, fmt.Errorf("edt: pinned map config: %w", err)
	}
	field := func(off int) uint32 {
		if len(raw) < off+4 {
			return 0
		}
		return binary.NativeEndian.Uint32(raw[off:])
	}
	// A program older than the idle credit has 0 at burst (its padding);
	// one older than the fingerprint has none: it is not this one.
	cfg.Overhead, cfg.L2Len, cfg.Burst, cfg.FlowAhead = field(4), field(8), field(12), field(16)
	cfg.Code = Code{field(20), field(24)}
	return cfg, len(raw) >= 12, nil
}
