package vm

import (
	"fmt"
	"io"
)

// cpioWriter writes a cpio archive in the "newc" format the kernel unpacks
// as an initramfs.
type cpioWriter struct {
	w   io.Writer
	ino uint32
	n   int64
	err error
}

const (
	cpioModeDir  = 0o040000
	cpioModeFile = 0o100000
	cpioModeLink = 0o120000
)

func newCPIOWriter(w io.Writer) *cpioWriter { return &cpioWriter{w: w, ino: 1} }

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// entry writes one archive member: name (no leading slash), mode (type and
// permission bits) and body (file content or symlink target).
func (c *cpioWriter) entry(name string, mode uint32, body []byte) {
	nlink := 1
	if mode&0o170000 == cpioModeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(body), 0, 0, 0, 0, len(name)+1, 0)
	c.ino++
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad()
	c.write(body)
	c.pad()
}

// Dir adds a directory.
func (c *cpioWriter) Dir(name string) { c.entry(name, cpioModeDir|0o755, nil) }

// File adds a regular file with the given permission bits.
func (c *cpioWriter) File(name string, perm uint32, body []byte) {
	c.entry(name, cpioModeFile|perm, body)
}

// Symlink adds a symbolic link name -> target.
func (c *cpioWriter) Symlink(name, target string) {
	c.entry(name, cpioModeLink|0o777, []byte(target))
}

// Close writes the trailer and returns the first error met.
func (c *cpioWriter) Close() error {
	c.entry("TRAILER!!!", 0, nil)
	if c.err != nil {
		return fmt.Errorf("write initramfs cpio: %w", c.err)
	}
	return nil
}
