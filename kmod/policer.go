package kmod

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// PolicerPath returns the native policer knob's path (/proc/gtp5g/qos).
func (m Module) PolicerPath() string { return filepath.Join(m.ProcDir, "qos") }

// Policer reports whether gtp5g's native MBR policer is on. gtp5g prints
// "QoS Enable: N".
func (m Module) Policer() (bool, error) {
	path := m.PolicerPath()
	b, err := m.read(path, "gtp5g native policer")
	if err != nil {
		return false, err
	}
	return parsePolicer(path, string(b))
}

// parsePolicer parses /proc/gtp5g/qos ("QoS Enable: 0\n"; a bare number is
// accepted too).
func parsePolicer(path, s string) (bool, error) {
	v := strings.TrimSpace(s)
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		v = strings.TrimSpace(v[i+1:])
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return false, fmt.Errorf("read gtp5g native policer: %s: unexpected content %q", path, s)
	}
	return n != 0, nil
}

// SetPolicer switches gtp5g's native MBR policer (needs root).
func (m Module) SetPolicer(on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	return m.write(m.PolicerPath(), "gtp5g native policer", v)
}
