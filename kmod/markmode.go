package kmod

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/free5gc/gtpqos/gtpnl"
)

// MarkModePath returns the gtp5g-patch mark-mode knob's path
// (/proc/gtp5g/qos_mark).
func (m Module) MarkModePath() string { return filepath.Join(m.ProcDir, "qos_mark") }

// MarkMode reads the gtp5g-patch series' mark mode. On a stock module the
// knob is absent: the error names it and matches os.ErrNotExist.
func (m Module) MarkMode() (gtpnl.MarkMode, error) {
	path := m.MarkModePath()
	b, err := m.read(path, "gtp5g mark mode (gtpqos patch)")
	if err != nil {
		return 0, err
	}
	mode, err := gtpnl.ParseMarkMode(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("read gtp5g mark mode: %s: %w", path, err)
	}
	return mode, nil
}

// SetMarkMode sets the gtp5g-patch series' mark mode (needs root).
func (m Module) SetMarkMode(mode gtpnl.MarkMode) error {
	if mode > gtpnl.MarkPDR {
		return fmt.Errorf("set gtp5g mark mode: invalid mode %d", uint8(mode))
	}
	return m.write(m.MarkModePath(), "gtp5g mark mode (gtpqos patch)", mode.String())
}
