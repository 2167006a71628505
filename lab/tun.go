package lab

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openTUN creates a TUN device (IFF_TUN|IFF_NO_PI) in the namespace of the
// calling thread and returns its non-blocking file (reads and writes go
// through the runtime poller, so Close interrupts a blocked Read).
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun for %s: %w", name, err)
	}
	var req [unix.IFNAMSIZ + 64]byte
	copy(req[:unix.IFNAMSIZ-1], name)
	*(*uint16)(unsafe.Pointer(&req[unix.IFNAMSIZ])) = unix.IFF_TUN | unix.IFF_NO_PI
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.TUNSETIFF), uintptr(unsafe.Pointer(&req[0]))); errno != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("create tun %s: %w", name, errno)
	}
	return os.NewFile(uintptr(fd), "tun:"+name), nil
}
