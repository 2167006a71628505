// Package marksend sends minimal frames out of one device, each with its
// own skb->mark, from one pinned thread: the load of the datapath
// benchmarks, which measure what a shaped device's egress costs a packet.
// It is for tests and benchmarks only.
package marksend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Sender sends one minimal frame (Ethernet + IPv4 + UDP, 60 bytes) out
// of one device, each copy with its own skb->mark, from one pinned thread.
//
// It uses an AF_PACKET socket bound to the device with protocol 0 (so no
// packet tap is registered and nothing is copied back to it) and sendmmsg
// with an SO_MARK control message per datagram: one syscall per batch,
// a mark per packet, and no UDP/IP route or neighbour lookup on the way
// down, so the kernel path is packet_snd -> dev_queue_xmit -> qdisc ->
// veth. A UDP socket would add the IP output path to every packet, and
// SO_MARK per socket or per setsockopt would need one socket or syscall
// per flow change.
type Sender struct {
	fd    int
	frame []byte
	iov   unix.Iovec
	msgs  []mmsghdr
	oob   []byte
	marks []uint32
	next  int // index in marks of the next packet's mark
}

// mmsghdr is struct mmsghdr (x/sys/unix has no type for it).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// sendBatch is the number of datagrams per sendmmsg call (UIO_MAXIOV is
// 1024; 256 keeps a batch's control messages in L1).
const sendBatch = 256

var cmsgMarkLen = unix.CmsgSpace(4)

// New opens the socket inside ns on dev. Frames go from src to
// dst (dstMAC need not exist: the peer drops them).
func New(ns netns.NsHandle, dev string, dstMAC net.HardwareAddr, src, dst net.IP, marks []uint32) (*Sender, error) {
	if len(marks) == 0 {
		return nil, errors.New("no marks to send")
	}
	fd, ifi, err := packetSocketAt(ns, dev)
	if err != nil {
		return nil, err
	}
	s := &Sender{fd: fd, frame: udpFrame(dstMAC, ifi.HardwareAddr, src, dst), marks: marks,
		msgs: make([]mmsghdr, sendBatch), oob: make([]byte, sendBatch*cmsgMarkLen)}
	s.iov.Base = &s.frame[0]
	s.iov.SetLen(len(s.frame))
	for i := range s.msgs {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&s.oob[i*cmsgMarkLen]))
		h.Level, h.Type = unix.SOL_SOCKET, unix.SO_MARK
		h.SetLen(unix.CmsgLen(4))
		m := &s.msgs[i].hdr
		m.Iov = &s.iov
		m.SetIovlen(1)
		m.Control = &s.oob[i*cmsgMarkLen]
		m.SetControllen(cmsgMarkLen)
	}
	return s, nil
}

// packetSocketAt opens an AF_PACKET raw socket in ns bound to dev.
func packetSocketAt(ns netns.NsHandle, dev string) (int, *net.Interface, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return -1, nil, err
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		return -1, nil, err
	}
	defer func() { _ = netns.Set(orig) }()
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return -1, nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	// In-flight skbs are charged to the socket; a large buffer keeps
	// sendmmsg from sleeping while the qdisc holds up to txqueuelen.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 16<<20); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("SO_SNDBUFFORCE: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("bind AF_PACKET to %s: %w", dev, err)
	}
	return fd, ifi, nil
}

// udpFrame builds an Ethernet/IPv4/UDP frame with an 18-byte payload
// (60 bytes, the minimum Ethernet frame without FCS).
func udpFrame(dstMAC, srcMAC net.HardwareAddr, src, dst net.IP) []byte {
	f := make([]byte, 60)
	copy(f[0:6], dstMAC)
	copy(f[6:12], srcMAC)
	binary.BigEndian.PutUint16(f[12:], unix.ETH_P_IP)
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
	copy(ip[12:16], src.To4())
	copy(ip[16:20], dst.To4())
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := f[34:42]
	binary.BigEndian.PutUint16(udp[0:], 9)
	binary.BigEndian.PutUint16(udp[2:], 9)
	binary.BigEndian.PutUint16(udp[4:], uint16(len(f)-34)) // checksum 0: none
	return f
}

// Result is what one send run did.
type Result struct {
	Accepted int // datagrams the kernel took (queued or sent)
	ENOBUFS  int // datagrams refused with ENOBUFS (dropped by the qdisc)
	Elapsed  time.Duration
	// CPU is the sending thread's own CPU time (CLOCK_THREAD_CPUTIME_ID:
	// its syscalls and the softirq work done on its way out of them);
	// below Elapsed when another task took the CPU.
	CPU time.Duration
	Err error
}

// Run sends n datagrams on a new thread pinned to cpu, cycling through the
// marks, and returns when the kernel has taken them all. ENOBUFS (a qdisc
// drop) is counted and the datagram is sent again.
func (s *Sender) Run(cpu, n int) Result {
	ch := make(chan Result, 1)
	go func() {
		// The thread is never unlocked: it exits with the goroutine, so
		// its CPU affinity does not leak to other goroutines.
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			ch <- Result{Err: fmt.Errorf("pin sender to CPU %d: %w", cpu, err)}
			return
		}
		ch <- s.send(n)
	}()
	return <-ch
}

// send is Run's loop on the current thread.
func (s *Sender) send(n int) Result {
	var r Result
	cpu0 := threadCPU()
	start := time.Now()
	for r.Accepted < n {
		k := min(sendBatch, n-r.Accepted)
		for i := 0; i < k; i++ {
			*(*uint32)(unsafe.Pointer(&s.oob[i*cmsgMarkLen+unix.CmsgLen(0)])) = s.marks[s.next]
			if s.next++; s.next == len(s.marks) {
				s.next = 0
			}
		}
		for off := 0; off < k; {
			got, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(s.fd),
				uintptr(unsafe.Pointer(&s.msgs[off])), uintptr(k-off), 0, 0, 0)
			switch {
			case errno == unix.ENOBUFS:
				r.ENOBUFS++
			case errno != 0:
				r.Err = fmt.Errorf("sendmmsg: %w", errno)
				return r
			default:
				off += int(got)
				r.Accepted += int(got)
			}
		}
	}
	r.Elapsed = time.Since(start)
	r.CPU = threadCPU() - cpu0
	return r
}

// threadCPU returns the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// Close closes the socket.
func (s *Sender) Close() error { return unix.Close(s.fd) }
