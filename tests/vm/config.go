package vm

import (
	"io"
	"time"
)

// Config describes one guest run.
type Config struct {
	// Script is a POSIX shell script run by the host's /bin/sh inside the
	// guest, chrooted into the host root (read-only, with tmpfs on /tmp and
	// /run, fresh /proc, /sys, /dev, /dev/pts, bpffs). Its exit status is
	// Result.ExitCode. Required.
	Script string
	// Dir is the script's working directory in the guest (default
	// GuestWorkDir). The host's paths are the guest's paths, so a package
	// directory such as /work/main/shaper works (read-only).
	Dir string
	// Env adds variables to the script's environment. The script always
	// gets PATH, HOME=/tmp, TMPDIR=/tmp, GTPQOS_IN_VM=1 and
	// VM_WORK=GuestWorkDir.
	Env map[string]string
	// Files are copied into the work directory before boot: key is the
	// name under GuestWorkDir in the guest, value the host path. (The
	// host's /tmp is hidden in the guest, so hand files over this way; only
	// a repository checked out under /tmp, /run or /var/tmp is shared again.)
	Files map[string]string
	// KO is a host path to an extra kernel module (e.g. gtp5g.ko, usually
	// os.Getenv("GTP5G_KO")). It is copied into the guest, its
	// dependencies are loaded from the distro kernel, and it is insmod'ed
	// before the script. Its vermagic picks the kernel release to boot.
	KO string
	// KOArgs are module parameters for KO ("name=value").
	KOArgs []string
	// Modules are loaded in addition to DefaultModules.
	Modules []string
	// KernelRelease forces a kernel release (e.g. "6.1.0-57-amd64");
	// default: KO's vermagic, else the newest kernel of KernelSeries.
	KernelRelease string
	// KernelSeries picks the Debian 12 kernel line when neither KO nor
	// KernelRelease names a release: "6.1" (linux-image-6.1.0-N-amd64) or
	// "6.12" (bookworm-backports' linux-image-6.12.N+deb12-amd64: fq bands
	// and weights, TCX). Default: $GTPQOS_VM_KERNEL, else "6.1". When set,
	// a KO or KernelRelease of another series is an error.
	KernelSeries string
	// Timeout bounds the whole run, boot included (default 5 minutes).
	// On expiry qemu is killed and Run fails.
	Timeout time.Duration
	// CPUs and MemoryMiB size the guest (default 2 and 2048).
	CPUs, MemoryMiB int
	// KernelArgs are appended to the guest kernel's command line, e.g.
	// "slub_debug=FZP,kmalloc-64" to catch writes to freed objects.
	KernelArgs []string
	// AllowKernelErrors keeps Run from failing the test when the guest's
	// kernel log has an oops, BUG, WARNING or panic (see
	// Result.KernelErrors).
	AllowKernelErrors bool
	// Stream, if set, receives the scenario's console output line by line
	// as it arrives (Run with a testing.TB streams to t.Log when nil).
	Stream io.Writer
}

// Result is what a guest run produced.
type Result struct {
	// ExitCode is the scenario script's exit status.
	ExitCode int
	// Output is the console text between the begin and end markers: the
	// scenario's stdout and stderr (kernel warnings may interleave).
	Output string
	// Console is the whole serial console, boot messages included.
	Console string
	// Kernel is the release that ran, e.g. "6.1.0-57-amd64".
	Kernel string
	// Boot is the time from starting qemu to the scenario starting;
	// Scenario is the scenario's own run time.
	Boot, Scenario time.Duration
	// Dmesg is the guest's kernel log after the scenario (all levels;
	// the console shows only errors).
	Dmesg string
	// KernelErrors are the lines of Dmesg that report a kernel bug: oops,
	// BUG, WARNING, general protection fault, panic, KASAN/UBSAN, SLUB
	// debug reports; and a line for a taint such a report sets (W, B, D,
	// L, M) when the guest kernel ends the scenario with it.
	KernelErrors []string
	// WorkDir is the host directory shared read-write as GuestWorkDir; the
	// scenario may leave files there. Run removes it when the test ends.
	WorkDir string
	// Retried is why the guest was booted a second time ("": it was
	// not): a first boot that hung silent, whose kernel panicked before
	// any module was loaded, or that stalled before the scenario began.
	Retried string
}
