package vm

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// modIndex is a kernel's modules.dep and modules.builtin, keyed by module
// name with '-' normalised to '_'.
type modIndex struct {
	dir     string              // .../lib/modules/<release>
	path    map[string]string   // name -> path relative to dir
	deps    map[string][]string // name -> names it depends on
	builtin map[string]bool
}

func modName(s string) string {
	s = filepath.Base(s)
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		s = strings.TrimSuffix(s, ext)
	}
	return strings.ReplaceAll(strings.TrimSuffix(s, ".ko"), "-", "_")
}

// loadModIndex reads modules.dep (written by depmod) and modules.builtin
// from a module directory.
func loadModIndex(dir string) (*modIndex, error) {
	ix := &modIndex{dir: dir, path: map[string]string{}, deps: map[string][]string{}, builtin: map[string]bool{}}
	dep, err := os.ReadFile(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, fmt.Errorf("kernel modules index: %w", err)
	}
	if err := ix.parseDep(dep); err != nil {
		return nil, fmt.Errorf("%s/modules.dep: %w", dir, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			ix.builtin[modName(l)] = true
		}
	}
	return ix, nil
}

func (ix *modIndex) parseDep(b []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		mod, rest, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("line %q: no ':'", line)
		}
		n := modName(mod)
		ix.path[n] = mod
		for _, d := range strings.Fields(rest) {
			ix.deps[n] = append(ix.deps[n], modName(d))
		}
	}
	return sc.Err()
}

// order returns the loadable modules needed for names, dependencies first,
// each once. Built-in modules are left out; an unknown name is an error.
func (ix *modIndex) order(names ...string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var visit func(n string, chain []string) error
	visit = func(n string, chain []string) error {
		n = modName(n)
		if seen[n] || ix.builtin[n] {
			return nil
		}
		if _, ok := ix.path[n]; !ok {
			return fmt.Errorf("kernel module %s (needed by %v): not in %s/modules.dep", n, chain, ix.dir)
		}
		seen[n] = true
		for _, d := range ix.deps[n] {
			if err := visit(d, append(chain, n)); err != nil {
				return err
			}
		}
		out = append(out, n)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readModule returns a module file's contents, decompressed if the distro
// ships it compressed (busybox insmod in the initramfs takes plain .ko).
func readModule(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kernel module: %w", err)
	}
	defer f.Close()
	switch {
	case strings.HasSuffix(path, ".gz"):
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("kernel module %s: %w", path, err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("kernel module %s: %w", path, err)
		}
		return b, nil
	case strings.HasSuffix(path, ".xz"), strings.HasSuffix(path, ".zst"):
		tool := "xz"
		if strings.HasSuffix(path, ".zst") {
			tool = "zstd"
		}
		b, err := exec.Command(tool, "-dc", path).Output()
		if err != nil {
			return nil, fmt.Errorf("kernel module %s: decompress with %s: %w", path, tool, err)
		}
		return b, nil
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("kernel module %s: %w", path, err)
	}
	return b, nil
}

// modInfo returns the key=value pairs in a module's .modinfo section
// (vermagic, depends, name, ...). Repeated keys keep the last value.
func modInfo(path string) (map[string]string, error) {
	b, err := readModule(path)
	if err != nil {
		return nil, err
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("kernel module %s: not an ELF object: %w", path, err)
	}
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("kernel module %s: no .modinfo section", path)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("kernel module %s: read .modinfo: %w", path, err)
	}
	info := map[string]string{}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			info[k] = v
		}
	}
	return info, nil
}

// koRelease returns the kernel release a module was built for (the first
// word of its vermagic) and the modules it depends on.
func koRelease(path string) (release string, deps []string, err error) {
	info, err := modInfo(path)
	if err != nil {
		return "", nil, err
	}
	vm := strings.Fields(info["vermagic"])
	if len(vm) == 0 {
		return "", nil, fmt.Errorf("kernel module %s: no vermagic", path)
	}
	for _, d := range strings.Split(info["depends"], ",") {
		if d = strings.TrimSpace(d); d != "" {
			deps = append(deps, d)
		}
	}
	return vm[0], deps, nil
}
