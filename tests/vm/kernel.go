package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Kernel is an unpacked Debian kernel package (never installed).
type Kernel struct {
	// Release is the kernel release, e.g. "6.1.0-57-amd64".
	Release string
	// Root is the unpacked package tree; modules are in
	// Root/lib/modules/Release (with a modules.dep from depmod).
	Root string
	// Vmlinuz is the kernel image to boot.
	Vmlinuz string
}

// ModDir is the directory holding the kernel's modules and modules.dep.
func (k *Kernel) ModDir() string { return filepath.Join(k.Root, "lib", "modules", k.Release) }

// CacheDir is where kernels are downloaded and unpacked: $GTPQOS_VM_CACHE,
// else /var/cache/gtpqos-vm (outside the git tree).
func CacheDir() string {
	if d := os.Getenv("GTPQOS_VM_CACHE"); d != "" {
		return d
	}
	return "/var/cache/gtpqos-vm"
}

// PrepareKernel returns a Debian 12 kernel of the series $GTPQOS_VM_KERNEL
// names (default 6.1), or the one want belongs to, unpacked under cacheDir.
//
// With want empty it takes the newest linux-image of the series apt knows
// whose package downloads (signed, else -unsigned), reusing an unpacked
// copy when there is one; offline, it falls back to the newest cached one.
// With want set (a release such as "6.1.0-57-amd64", e.g. a gtp5g.ko's
// vermagic) it takes exactly that release. $GTPQOS_VM_KERNEL_DEB names a
// .deb to use instead of asking apt.
func PrepareKernel(ctx context.Context, cacheDir, want string) (*Kernel, error) {
	s, err := pickSeries("", want)
	if err != nil {
		return nil, err
	}
	return prepareKernel(ctx, cacheDir, s, want)
}

func prepareKernel(ctx context.Context, cacheDir string, s *series, want string) (*Kernel, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("kernel cache: %w", err)
	}
	unlock, err := lockDir(cacheDir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if deb := os.Getenv("GTPQOS_VM_KERNEL_DEB"); deb != "" {
		name, _, _ := strings.Cut(filepath.Base(deb), "_")
		for _, ds := range allSeries {
			if m := ds.pkgRE.FindStringSubmatch(name); m != nil {
				if k := cachedKernel(cacheDir, m[1]); k != nil {
					return k, nil
				}
			}
		}
		return unpackDeb(ctx, cacheDir, deb)
	}
	if want != "" {
		if k := cachedKernel(cacheDir, want); k != nil {
			return k, nil
		}
	}
	srcs, err := aptSources(cacheDir, s)
	if err != nil {
		return nil, err
	}
	var errs []error
	for attempt := 0; attempt < 2; attempt++ {
		if attempt == 1 {
			// Offline, or the lists are stale (or, for a private suite,
			// never fetched): a cached kernel will do; else refresh the
			// package lists once and retry.
			if want == "" {
				if k := newestCachedKernel(cacheDir, s); k != nil {
					return k, nil
				}
			}
			if err := aptUpdate(ctx, srcs); err != nil {
				errs = append(errs, err)
				break
			}
		}
		k, err := fromApt(ctx, cacheDir, s, srcs, want)
		if k != nil {
			return k, nil
		}
		errs = append(errs, err...)
	}
	what := s.pattern
	if want != "" {
		what = "linux-image-" + want
	}
	return nil, fmt.Errorf("get Debian kernel %s: %w", what, errors.Join(errs...))
}

// fromApt returns the newest cached-or-downloadable candidate of all the
// sources, or the errors met. A source apt-cache fails on is skipped.
func fromApt(ctx context.Context, cacheDir string, s *series, srcs [][]string, want string) (*Kernel, []error) {
	var lists [][]kernelCand
	var errs []error
	for _, opts := range srcs {
		cands, err := aptKernelCandidates(ctx, s, opts, want)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		lists = append(lists, cands)
	}
	cands := mergeKernelCands(lists...)
	for _, c := range cands {
		if k := cachedKernel(cacheDir, c.release); k != nil {
			return k, nil
		}
		for _, pkg := range []string{c.pkg, c.pkg + "-unsigned"} {
			deb, err := aptDownload(ctx, cacheDir, c.opts, pkg)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			k, err := unpackDeb(ctx, cacheDir, deb)
			_ = os.Remove(deb)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			return k, nil
		}
	}
	if len(cands) == 0 {
		errs = append(errs, fmt.Errorf("apt-cache lists no matching %s", s.pattern))
	}
	return nil, errs
}

type kernelCand struct {
	release string
	pkg     string
	n       int
	opts    []string // the apt options of the source that lists it
}

// aptKernelCandidates lists a series' linux-image packages apt knows
// through one source, newest first (only want, when set).
func aptKernelCandidates(ctx context.Context, s *series, opts []string, want string) ([]kernelCand, error) {
	args := append(append([]string{}, opts...), "search", "--names-only", s.search)
	out, err := exec.CommandContext(ctx, "apt-cache", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("apt-cache search %s: %w", s.pattern, err)
	}
	return parseKernelCands(s, string(out), opts, want), nil
}

// parseKernelCands reads apt-cache search output: the series' images
// (signed or -unsigned, once per release), newest first.
func parseKernelCands(s *series, out string, opts []string, want string) []kernelCand {
	seen := map[string]bool{}
	var cands []kernelCand
	for _, line := range strings.Split(out, "\n") {
		name, _, _ := strings.Cut(line, " ")
		m := s.pkgRE.FindStringSubmatch(name)
		if m == nil || seen[m[1]] || (want != "" && m[1] != want) {
			continue
		}
		seen[m[1]] = true
		n, _ := strconv.Atoi(m[2])
		cands = append(cands, kernelCand{release: m[1], pkg: "linux-image-" + m[1], n: n, opts: opts})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].n > cands[j].n })
	return cands
}

// mergeKernelCands joins the candidates of several sources, newest first;
// a release more than one source lists comes from the first of them.
func mergeKernelCands(lists ...[]kernelCand) []kernelCand {
	seen := map[string]bool{}
	var out []kernelCand
	for _, l := range lists {
		for _, c := range l {
			if !seen[c.release] {
				seen[c.release] = true
				out = append(out, c)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].n > out[j].n })
	return out
}

func aptDownload(ctx context.Context, cacheDir string, opts []string, pkg string) (string, error) {
	dl := filepath.Join(cacheDir, "download")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return "", fmt.Errorf("apt-get download %s: %w", pkg, err)
	}
	cmd := exec.CommandContext(ctx, "apt-get", append(append([]string{}, opts...), "download", "-q", pkg)...)
	cmd.Dir = dl
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %w: %s", pkg, err, lastLine(string(out)))
	}
	debs, _ := filepath.Glob(filepath.Join(dl, pkg+"_*.deb"))
	if len(debs) == 0 {
		return "", fmt.Errorf("apt-get download %s: no .deb in %s", pkg, dl)
	}
	return debs[len(debs)-1], nil
}

// unpackDeb extracts a kernel .deb with dpkg-deb -x into
// cacheDir/<release>, runs depmod on it and marks it complete.
func unpackDeb(ctx context.Context, cacheDir, deb string) (*Kernel, error) {
	tmp, err := os.MkdirTemp(cacheDir, ".unpack-")
	if err != nil {
		return nil, fmt.Errorf("unpack %s: %w", deb, err)
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, tmp).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("dpkg-deb -x %s: %w: %s", deb, err, lastLine(string(out)))
	}
	vmlinuz, _ := filepath.Glob(filepath.Join(tmp, "boot", "vmlinuz-*"))
	if len(vmlinuz) != 1 {
		return nil, fmt.Errorf("unpack %s: want one boot/vmlinuz-*, found %d", deb, len(vmlinuz))
	}
	release := strings.TrimPrefix(filepath.Base(vmlinuz[0]), "vmlinuz-")
	if out, err := exec.CommandContext(ctx, "depmod", "-b", tmp, release).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("depmod -b %s %s: %w: %s", tmp, release, err, lastLine(string(out)))
	}
	dst := filepath.Join(cacheDir, release)
	_ = os.RemoveAll(dst)
	if err := os.Rename(tmp, dst); err != nil {
		return nil, fmt.Errorf("unpack %s: %w", deb, err)
	}
	if err := os.WriteFile(filepath.Join(dst, ".complete"), []byte(filepath.Base(deb)+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("unpack %s: %w", deb, err)
	}
	return cachedKernel(cacheDir, release), nil
}

func cachedKernel(cacheDir, release string) *Kernel {
	root := filepath.Join(cacheDir, release)
	if _, err := os.Stat(filepath.Join(root, ".complete")); err != nil {
		return nil
	}
	k := &Kernel{Release: release, Root: root, Vmlinuz: filepath.Join(root, "boot", "vmlinuz-"+release)}
	if _, err := os.Stat(k.Vmlinuz); err != nil {
		return nil
	}
	return k
}

// newestCachedKernel returns the newest unpacked kernel of a series.
func newestCachedKernel(cacheDir string, s *series) *Kernel {
	ents, _ := os.ReadDir(cacheDir)
	best, bestN := (*Kernel)(nil), -1
	for _, e := range ents {
		m := s.pkgRE.FindStringSubmatch("linux-image-" + e.Name())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		if k := cachedKernel(cacheDir, e.Name()); k != nil && n > bestN {
			best, bestN = k, n
		}
	}
	return best
}

// lockDir takes an exclusive flock on dir/.lock so that concurrent test
// runs do not download or unpack into the cache at the same time.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock kernel cache %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock kernel cache %s: %w", dir, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
