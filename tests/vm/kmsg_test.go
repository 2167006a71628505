package vm

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"
)

// kmsgTail reads the kernel log records written after it was opened,
// for guest tests that judge the module by what it logs.
type kmsgTail struct{ fd int }

// openKmsgTail opens /dev/kmsg positioned after its last record.
func openKmsgTail() (*kmsgTail, error) {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/kmsg: %w", err)
	}
	if _, err := unix.Seek(fd, 0, io.SeekEnd); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("seek /dev/kmsg: %w", err)
	}
	return &kmsgTail{fd: fd}, nil
}

// lines returns the messages logged since the last call (or the open).
// Records the ring overwrote before they were read are skipped.
func (k *kmsgTail) lines() ([]string, error) {
	var out []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Read(k.fd, buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return out, nil
		case errors.Is(err, unix.EPIPE):
			continue
		case err != nil:
			return out, fmt.Errorf("read /dev/kmsg: %w", err)
		}
		// "prio,seq,usec,flags;message\n" followed by " KEY=value" lines
		rec := string(buf[:n])
		if _, msg, ok := strings.Cut(rec, ";"); ok {
			msg, _, _ = strings.Cut(msg, "\n")
			out = append(out, msg)
		}
	}
}

func (k *kmsgTail) close() { _ = unix.Close(k.fd) }

// matching returns the lines that contain any of the substrings.
func matching(lines []string, subs ...string) []string {
	var out []string
	for _, l := range lines {
		for _, s := range subs {
			if strings.Contains(l, s) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// bugLines returns the kernel's reports of a bug among kmsg messages,
// which carry no timestamp: the lines kernelErrors picks from a dmesg,
// such as a WARN's "WARNING: CPU: 0 PID: 1 at ...". A guest test that
// reads its own stretch of the log sees them even when the ring has
// overwritten them by the time the harness reads the whole log.
func bugLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if kernelErrorRE.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}
