package classify

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DefaultPinRoot is where gtpqos pins its BPF objects in bpffs, one
// directory per network namespace and device below it.
//
// Why pins: a process that did not load a program (a restarted daemon,
// 'gtpqos reset') can open it by id only with CAP_SYS_ADMIN; a pinned
// program and its maps open by path with the pin's file permissions alone.
const DefaultPinRoot = "/sys/fs/bpf/gtpqos"

var pinRoot = DefaultPinRoot

// SetPinRoot sets the pin root (for every device); "" restores the default.
func SetPinRoot(dir string) {
	if dir == "" {
		dir = DefaultPinRoot
	}
	pinRoot = filepath.Clean(dir)
}

// PinRoot returns the pin root in use.
func PinRoot() string { return pinRoot }

// ErrNoBPFFS says the pin root is not on a bpffs.
var ErrNoBPFFS = errors.New("not on a bpffs")

// absent reports whether err says there are no pins to find.
func absent(err error) bool { return errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNoBPFFS) }

// Pins is one device's pin directory: <root>/<netns inode>/<dev>. Only the
// files a classifier names are ever created, replaced or removed there.
type Pins struct {
	// Root is the pin root, Dir the device's directory under it.
	Root, Dir string
}

// DevicePins returns the pin directory of dev in the calling thread's
// network namespace (the one a netlink handle opened by it works in).
// eth1 in two namespaces (two UPF containers on one host) is two devices.
func DevicePins(dev string) (Pins, error) {
	if dev == "" || dev == "." || dev == ".." || filepath.Base(dev) != dev {
		return Pins{}, fmt.Errorf("BPF pins: bad device name %q", dev)
	}
	st, err := os.Stat("/proc/thread-self/ns/net")
	if err != nil {
		return Pins{}, fmt.Errorf("BPF pins: network namespace: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return Pins{}, errors.New("BPF pins: network namespace: no inode number")
	}
	return Pins{Root: pinRoot, Dir: filepath.Join(pinRoot, fmt.Sprint(sys.Ino), dev)}, nil
}

// Path returns the path of the named pin.
func (p Pins) Path(name string) string { return filepath.Join(p.Dir, name) }

// Ensure makes the directories that are missing (mode 0755) and checks
// them all: the root must be on a writable bpffs, and no directory may be
// a symlink, belong to another user than this one or root, or be writable
// by group or others (whoever could write there could plant a pin).
func (p Pins) Ensure() error { return p.walk(true) }

// Check is Ensure without creating anything: a missing directory is an
// error wrapping fs.ErrNotExist. Run by root it also accepts directories
// of another user (the daemon's own), so root reads what the daemon pinned.
func (p Pins) Check() error { return p.walk(false) }

func (p Pins) walk(create bool) error {
	if p.Root == "" {
		return errors.New("BPF pins: no pin directory")
	}
	dirs := []string{p.Root}
	rel, err := filepath.Rel(p.Root, p.Dir)
	if err != nil {
		return fmt.Errorf("BPF pins: %w", err)
	}
	d := p.Root
	for _, part := range splitPath(rel) {
		d = filepath.Join(d, part)
		dirs = append(dirs, d)
	}
	for i, dir := range dirs {
		if create {
			parent := filepath.Dir(dir)
			if i == 0 {
				if err := onBPFFS(parent, false); err != nil && !isBPFFS(dir) {
					return err
				}
			}
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return pinDirErr(dir, err)
			}
		}
		if err := checkDir(dir, !create && os.Geteuid() == 0); err != nil {
			return err
		}
		if i == 0 {
			if err := onBPFFS(dir, create); err != nil {
				return err
			}
		}
	}
	return nil
}

func splitPath(rel string) []string {
	var out []string
	for rel != "." && rel != "" {
		dir, base := filepath.Split(rel)
		out = append([]string{base}, out...)
		rel = filepath.Clean(dir)
		if dir == "" {
			break
		}
	}
	return out
}

// pinDirErr names the directory and what the operator can do.
func pinDirErr(dir string, err error) error {
	switch {
	case errors.Is(err, unix.EROFS):
		return fmt.Errorf("BPF pin directory %s: bpffs is read-only (mount it read-write, or use classifier fw)", dir)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("BPF pin directory %s: permission denied for uid %d (create it owned by this user, mode 0755: install -d -o %d -m 0755 %s)", dir, os.Geteuid(), os.Geteuid(), dir)
	}
	return fmt.Errorf("BPF pin directory %s: %w", dir, err)
}

func isBPFFS(dir string) bool { return onBPFFS(dir, false) == nil }

// onBPFFS fails unless dir is on a bpffs (and, if writable is set, one
// mounted read-write).
func onBPFFS(dir string, writable bool) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("BPF pin directory %s: %w (no bpffs there: mount -t bpf bpf %s, or use classifier fw)", dir, fs.ErrNotExist, filepath.Dir(dir))
		}
		return fmt.Errorf("BPF pin directory %s: %w", dir, err)
	}
	if st.Type != unix.BPF_FS_MAGIC {
		return fmt.Errorf("BPF pin directory %s: %w (mount -t bpf bpf /sys/fs/bpf, or in a container bind-mount a bpffs directory there; or use classifier fw)", dir, ErrNoBPFFS)
	}
	if writable && st.Flags&unix.ST_RDONLY != 0 {
		return fmt.Errorf("BPF pin directory %s: bpffs is read-only (mount it read-write, or use classifier fw)", dir)
	}
	return nil
}

// checkDir refuses a directory someone else could plant pins in. With
// anyOwner (root reading pins, not creating them) a directory of another
// user is accepted: it is the daemon's, which runs as its own user, and
// status or reset as root must find what that daemon pinned.
func checkDir(dir string, anyOwner bool) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("BPF pin directory %s: %w", dir, fs.ErrNotExist)
		}
		return pinDirErr(dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("BPF pin directory %s is a symlink: refusing to follow it", dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("BPF pin directory %s is not a directory", dir)
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("BPF pin directory %s: no owner", dir)
	}
	if !anyOwner && sys.Uid != 0 && int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("BPF pin directory %s belongs to uid %d, not to this user (%d) or root: refusing it", dir, sys.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("BPF pin directory %s is writable by group or others (mode %o): refusing it", dir, fi.Mode().Perm())
	}
	return nil
}

// Lookup returns the named pin's path if it is there. A pin that is not a
// regular file (a symlink planted there) is an error: it is never followed.
func (p Pins) Lookup(name string) (string, bool, error) {
	if err := p.Check(); err != nil {
		if absent(err) {
			return "", false, nil
		}
		return "", false, err
	}
	path := p.Path(name)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("BPF pin %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("BPF pin %s is not a pinned object (%s): refusing to follow it", path, fi.Mode().Type())
	}
	return path, true, nil
}

// Replace pins an object under name: pin writes it to name_new (bpffs
// refuses names with a dot),
// which then replaces the old pin in one rename, so a reader never finds
// none or half of it.
func (p Pins) Replace(name string, fd int) error {
	if err := p.Ensure(); err != nil {
		return err
	}
	tmp := p.Path(name + "_new")
	if err := removePin(tmp); err != nil {
		return err
	}
	if err := objPin(fd, tmp); err != nil {
		return fmt.Errorf("pin BPF object at %s: %w", tmp, err)
	}
	final := p.Path(name)
	if fi, err := os.Lstat(final); err == nil && !fi.Mode().IsRegular() {
		_ = os.Remove(tmp)
		return fmt.Errorf("BPF pin %s is not a pinned object (%s): refusing to replace it", final, fi.Mode().Type())
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("pin BPF object at %s: %w", final, err)
	}
	return nil
}

// removePin unlinks a pin if it is a regular file; a missing one is fine.
func removePin(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("BPF pin %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("BPF pin %s is not a pinned object (%s): leaving it", path, fi.Mode().Type())
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove BPF pin %s: %w", path, err)
	}
	return nil
}

// Remove unlinks the named pins (never anything else) and then the
// device's and the namespace's directories if that left them empty.
func (p Pins) Remove(names ...string) error {
	if err := p.Check(); err != nil {
		if absent(err) {
			return nil
		}
		return err
	}
	for _, n := range names {
		if err := removePin(p.Path(n)); err != nil {
			return err
		}
		if err := removePin(p.Path(n + "_new")); err != nil {
			return err
		}
	}
	for _, d := range []string{p.Dir, filepath.Dir(p.Dir)} {
		if d == p.Root {
			break
		}
		if err := unix.Rmdir(d); err != nil {
			break // not empty (another device's pins) or gone
		}
	}
	return nil
}

// objPin pins the BPF object fd at path (BPF_OBJ_PIN). cilium/ebpf's Pin
// remembers one path per object and moves its pin there, which a rename
// behind its back would confuse.
func objPin(fd int, path string) error {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	attr := struct {
		Path   uint64
		FD     uint32
		Flags  uint32
		PathFD int32
		_      uint32
	}{Path: uint64(uintptr(unsafe.Pointer(p))), FD: uint32(fd)}
	_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_PIN, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(p)
	if errno != 0 {
		return errno
	}
	return nil
}
