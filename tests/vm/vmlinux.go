package vm

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// xenElfNotePhys32Entry is the ELF note (owner "Xen") that marks a PVH
// entry point; qemu boots such a vmlinux directly, skipping the BIOS
// boot path and the in-guest decompression of the bzImage.
const xenElfNotePhys32Entry = 18

// bootImage returns the image to pass to qemu's -kernel: an uncompressed
// vmlinux with a PVH entry, extracted once from the bzImage into the cache
// (under the cache lock), or the bzImage itself if that cannot be done.
// Under TCG this saves several seconds per boot.
func bootImage(k *Kernel) string {
	out := filepath.Join(k.Root, "boot", "vmlinux-"+k.Release)
	if hasPVHEntry(out) {
		return out
	}
	unlock, err := lockDir(filepath.Dir(k.Root))
	if err != nil {
		return k.Vmlinuz
	}
	defer unlock()
	if hasPVHEntry(out) {
		return out
	}
	if err := extractVmlinux(k.Vmlinuz, out); err != nil || !hasPVHEntry(out) {
		_ = os.Remove(out)
		return k.Vmlinuz
	}
	return out
}

// extractVmlinux finds the compressed payload in a bzImage (as the
// kernel's scripts/extract-vmlinux does) and decompresses it to out.
func extractVmlinux(bz, out string) error {
	img, err := os.ReadFile(bz)
	if err != nil {
		return fmt.Errorf("extract vmlinux: %w", err)
	}
	formats := []struct {
		magic []byte
		tool  string
	}{
		{[]byte("\xfd7zXZ\x00"), "xz"},
		{[]byte("\x28\xb5\x2f\xfd"), "zstd"},
		{[]byte("\x1f\x8b\x08"), "gzip"},
	}
	for _, f := range formats {
		for off := 0; ; {
			i := bytes.Index(img[off:], f.magic)
			if i < 0 {
				break
			}
			off += i
			data, _ := decompress(f.tool, img[off:]) // trailing bytes make the tools complain
			if isELF(data) {
				tmp := out + ".tmp"
				if err := os.WriteFile(tmp, data, 0o644); err != nil {
					return fmt.Errorf("extract vmlinux: %w", err)
				}
				return os.Rename(tmp, out)
			}
			off += len(f.magic)
		}
	}
	return fmt.Errorf("extract vmlinux from %s: no compressed ELF payload found", bz)
}

func decompress(tool string, b []byte) ([]byte, error) {
	if tool == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		zr.Multistream(false)
		return io.ReadAll(zr)
	}
	cmd := exec.Command(tool, "-dc")
	cmd.Stdin = bytes.NewReader(b)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	return out.Bytes(), err
}

func isELF(b []byte) bool {
	if len(b) < 64 || !bytes.HasPrefix(b, []byte("\x7fELF")) {
		return false
	}
	_, err := elf.NewFile(bytes.NewReader(b))
	return err == nil
}

// hasPVHEntry reports whether path is an ELF kernel with a Xen
// PHYS32_ENTRY note.
func hasPVHEntry(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			continue
		}
		for len(b) >= 12 {
			nsz := binary.LittleEndian.Uint32(b[0:])
			dsz := binary.LittleEndian.Uint32(b[4:])
			typ := binary.LittleEndian.Uint32(b[8:])
			name := b[12:]
			if uint32(len(name)) < nsz {
				break
			}
			if typ == xenElfNotePhys32Entry && string(bytes.TrimRight(name[:nsz], "\x00")) == "Xen" {
				return true
			}
			adv := 12 + align4(nsz) + align4(dsz)
			if adv > uint32(len(b)) {
				break
			}
			b = b[adv:]
		}
	}
	return false
}

func align4(n uint32) uint32 { return (n + 3) &^ 3 }
