package vm

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// SeriesEnv picks the kernel series when Config.KernelSeries is empty.
const SeriesEnv = "GTPQOS_VM_KERNEL"

// series is a line of Debian 12 kernels the harness can boot.
type series struct {
	name string // "6.1", "6.12"
	// suite is "" when the host's apt sources carry the packages, else a
	// Debian suite (bookworm-backports) that apt reads through a private
	// sources list in the cache, so the host's apt configuration is never
	// changed.
	suite string
	// pkgRE matches linux-image-<release>[-unsigned]; group 1 is the
	// release, group 2 the number that orders releases (newest highest).
	pkgRE *regexp.Regexp
	// search is the apt-cache search pattern for the packages.
	search string
	// pattern names the packages in messages.
	pattern string
	// bootModules are what the initramfs needs to mount the host root over
	// 9p, in load order; modules the kernel has built in are skipped.
	bootModules []string
}

var (
	series61 = &series{
		name:    "6.1",
		pkgRE:   regexp.MustCompile(`^linux-image-(6\.1\.0-([0-9]+)-amd64)(-unsigned)?$`),
		search:  `^linux-image-6\.1\.0-[0-9]+-amd64`,
		pattern: "linux-image-6.1.0-*-amd64",
		bootModules: []string{
			"virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci",
			"netfs", "fscache", "9pnet", "9pnet_virtio", "9p",
		},
	}
	// series612 is Debian 12's backported 6.12 (linux-image-6.12.N+deb12-amd64):
	// fq bands and weights (6.7+) and TCX (6.6+). Its modules are .ko.xz,
	// the virtio PCI stack is built in and fscache is part of netfs.
	series612 = &series{
		name:    "6.12",
		suite:   "bookworm-backports",
		pkgRE:   regexp.MustCompile(`^linux-image-(6\.12\.([0-9]+)\+deb12-amd64)(-unsigned)?$`),
		search:  `^linux-image-6\.12\.[0-9]+\+deb12-amd64`,
		pattern: "linux-image-6.12.*+deb12-amd64",
		bootModules: []string{
			"virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci",
			"netfs", "9pnet", "9pnet_virtio", "9p",
		},
	}
	allSeries = []*series{series61, series612}
)

// seriesOfRelease returns the series a release such as "6.1.0-57-amd64"
// or "6.12.95+deb12-amd64" belongs to, or nil.
func seriesOfRelease(release string) *series {
	for _, s := range allSeries {
		if s.pkgRE.MatchString("linux-image-" + release) {
			return s
		}
	}
	return nil
}

// pickSeries resolves the series to boot: name (Config.KernelSeries),
// else $GTPQOS_VM_KERNEL, else 6.1. A release (from a module's vermagic or
// Config.KernelRelease) decides when set; an explicit name must agree with
// it, while the variable is only a default.
func pickSeries(name, release string) (*series, error) {
	from := "Config.KernelSeries"
	if name == "" {
		name, from = os.Getenv(SeriesEnv), SeriesEnv
	}
	var s *series
	if name != "" {
		for _, c := range allSeries {
			if c.name == name {
				s = c
			}
		}
		if s == nil {
			return nil, fmt.Errorf("vm: %s=%q: want one of %s", from, name, seriesNames())
		}
	}
	if release == "" {
		if s == nil {
			s = series61
		}
		return s, nil
	}
	rs := seriesOfRelease(release)
	switch {
	case rs == nil:
		return nil, fmt.Errorf("vm: kernel release %s is not a Debian 12 kernel the harness boots (%s)", release, seriesNames())
	case s != nil && rs != s && from != SeriesEnv:
		return nil, fmt.Errorf("vm: kernel release %s is of series %s, but %s is %s", release, rs.name, from, s.name)
	}
	return rs, nil
}

func seriesNames() string {
	var n []string
	for _, s := range allSeries {
		n = append(n, s.name)
	}
	return strings.Join(n, ", ")
}
