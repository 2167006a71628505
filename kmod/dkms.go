package kmod

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DKMSBuild is one gtp5g build known to DKMS.
type DKMSBuild struct {
	// Version is the DKMS package version ("0.10.2+qos" for the patch).
	Version string
	// Kernel and Arch say what it was built for.
	Kernel, Arch string
	// Installed is true when DKMS installed this build for that kernel
	// (DKMS's kernel-<kernel>-<arch> link points at it), false when it is
	// only built.
	Installed bool
}

// String formats the build like `dkms status`: "gtp5g/V, K, A: installed".
func (b DKMSBuild) String() string {
	st := "built"
	if b.Installed {
		st = "installed"
	}
	return fmt.Sprintf("gtp5g/%s, %s, %s: %s", b.Version, b.Kernel, b.Arch, st)
}

// ErrNoDKMS is matched (errors.Is) when DKMS is not set up on the system
// (no /var/lib/dkms). It also matches os.ErrNotExist.
var ErrNoDKMS = fmt.Errorf("dkms not installed: %w", os.ErrNotExist)

// DKMS lists gtp5g's DKMS builds by reading DKMS's tree
// (<DKMSDir>/<version>/<kernel>/<arch>, and kernel-<kernel>-<arch> links
// for installed ones), without running dkms. No gtp5g under DKMS gives an
// empty list; no DKMS at all gives ErrNoDKMS.
func (m Module) DKMS() ([]DKMSBuild, error) {
	versions, err := os.ReadDir(m.DKMSDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, perr := os.Stat(filepath.Dir(m.DKMSDir)); errors.Is(perr, fs.ErrNotExist) {
				return nil, ErrNoDKMS
			}
			return nil, nil
		}
		return nil, fmt.Errorf("read gtp5g DKMS builds: %w", err)
	}
	var out []DKMSBuild
	for _, v := range versions {
		if !v.IsDir() || strings.HasPrefix(v.Name(), "kernel-") {
			continue
		}
		kernels, err := os.ReadDir(filepath.Join(m.DKMSDir, v.Name()))
		if err != nil {
			return nil, fmt.Errorf("read gtp5g DKMS builds: %w", err)
		}
		for _, k := range kernels {
			if !k.IsDir() || k.Name() == "source" || k.Name() == "build" {
				continue
			}
			arches, err := os.ReadDir(filepath.Join(m.DKMSDir, v.Name(), k.Name()))
			if err != nil {
				return nil, fmt.Errorf("read gtp5g DKMS builds: %w", err)
			}
			for _, a := range arches {
				if !a.IsDir() {
					continue
				}
				b := DKMSBuild{Version: v.Name(), Kernel: k.Name(), Arch: a.Name()}
				link := filepath.Join(m.DKMSDir, "kernel-"+k.Name()+"-"+a.Name())
				if target, err := os.Readlink(link); err == nil {
					b.Installed = filepath.Clean(target) == filepath.Join(v.Name(), k.Name(), a.Name())
				}
				out = append(out, b)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Version != out[j].Version {
			return out[i].Version < out[j].Version
		}
		if out[i].Kernel != out[j].Kernel {
			return out[i].Kernel < out[j].Kernel
		}
		return out[i].Arch < out[j].Arch
	})
	return out, nil
}
