// Package kmod reads and drives the gtp5g kernel module's non-genl side:
// whether it is loaded and its version (sysfs), the native MBR policer
// switch (/proc/gtp5g/qos), the gtp5g-patch series' mark-mode knob
// (/proc/gtp5g/qos_mark) and gtp5g's DKMS builds (/var/lib/dkms/gtp5g).
//
// All paths are fields of Module, so tests point them at temp dirs.
package kmod

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Module locates the gtp5g module's files.
type Module struct {
	// SysDir is the module's sysfs directory (/sys/module/gtp5g).
	SysDir string
	// ProcDir is gtp5g's procfs directory (/proc/gtp5g).
	ProcDir string
	// DKMSDir is gtp5g's DKMS tree (/var/lib/dkms/gtp5g).
	DKMSDir string
}

// Host returns the Module of the running system.
func Host() Module { return At("/") }

// At returns the Module with every path under root (a temp dir in tests).
func At(root string) Module {
	return Module{
		SysDir:  filepath.Join(root, "sys/module/gtp5g"),
		ProcDir: filepath.Join(root, "proc/gtp5g"),
		DKMSDir: filepath.Join(root, "var/lib/dkms/gtp5g"),
	}
}

// ErrNotLoaded is returned when gtp5g is not loaded. Its text is exactly
// "gtp5g module not loaded" and it matches os.ErrNotExist.
var ErrNotLoaded error = notLoaded{}

type notLoaded struct{}

func (notLoaded) Error() string        { return "gtp5g module not loaded" }
func (notLoaded) Is(target error) bool { return target == os.ErrNotExist }

// Loaded reports whether gtp5g is loaded (its sysfs directory exists).
func (m Module) Loaded() (bool, error) {
	_, err := os.Stat(m.SysDir)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("check gtp5g module: %w", err)
	}
}

// Version returns the loaded module's version (sysfs "version", e.g.
// "0.10.2"; a DKMS build of the patch series says the same, its package
// version "0.10.2+qos" is in DKMS).
func (m Module) Version() (string, error) {
	b, err := m.read(filepath.Join(m.SysDir, "version"), "gtp5g module version")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// read reads a module file, turning absence into ErrNotLoaded (module
// gone) or a knob-absent error naming the file.
func (m Module) read(path, what string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, m.fileError("read", path, what, err)
	}
	return b, nil
}

// write writes a module knob like "echo v > knob" (never creates it).
func (m Module) write(path, what, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return m.fileError("set", path, what, err)
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("set %s: write %q to %s: %w", what, value, path, werr)
	}
	if cerr != nil {
		return fmt.Errorf("set %s: %s: %w", what, path, cerr)
	}
	return nil
}

func (m Module) fileError(op, path, what string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if ok, _ := m.Loaded(); !ok {
			return ErrNotLoaded
		}
		return fmt.Errorf("%s %s: %s absent: %w", op, what, path, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s %s: %s: %w (needs root)", op, what, path, err)
	default:
		return fmt.Errorf("%s %s: %s: %w", op, what, path, err)
	}
}
