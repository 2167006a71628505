package vm

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultModules are loaded in every guest before the scenario runs
// (built-in ones, such as sch_fq_codel on Debian 12's 6.1 and 6.12, are
// skipped).
// Anything else the kernel asks for is loaded on demand: the guest's
// /proc/sys/kernel/modprobe points at the host's modprobe run against the
// unpacked kernel tree.
var DefaultModules = []string{
	"sch_htb", "cls_fw", "cls_u32", "sch_fq_codel", "veth", "tun", "udp_tunnel", "ip6_udp_tunnel",
}

// Console markers the guest's /init prints around the scenario.
const (
	markBegin = "===GTPQOS-VM-BEGIN==="
	markEnd   = "===GTPQOS-VM-END rc="
	markFail  = "===GTPQOS-VM-FAIL "
)

// GuestWorkDir is where the host's per-run work directory (read-write 9p
// share) appears inside the guest's chroot.
const GuestWorkDir = "/run/vm"

// rcExitSetup is the exit code /init reports when the guest could not be
// set up (a module failed to load, a mount failed); the scenario never ran.
const rcExitSetup = 125

type initParams struct {
	kernel *Kernel
	// bootModules are the series' virtio/9p modules (series.bootModules),
	// insmod'ed from the initramfs.
	bootModules []string
	modules     []string // modprobe'd in the guest after the host root is mounted
	ko          string   // guest path of the extra module, or ""
	koDeps      []string
	koArgs      []string
	// repo is a host directory under one of the guest's tmpfs mounts (/tmp,
	// /run, /var/tmp) that is shared again, read-only, over 9p tag "repo" at
	// the same path: the repository when it was cloned there (as CI may).
	repo string
}

// findStaticBusybox returns a statically linked busybox (Debian's
// busybox-static installs it as /bin/busybox).
func findStaticBusybox() (string, error) {
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox", "/usr/lib/initramfs-tools/bin/busybox"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		f.Close()
		if static {
			return p, nil
		}
	}
	if p, err := exec.LookPath("busybox"); err == nil {
		return "", fmt.Errorf("busybox at %s is dynamically linked: install busybox-static", p)
	}
	return "", fmt.Errorf("no static busybox: install busybox-static")
}

// buildInitramfs writes the guest's initramfs (cpio newc) to path.
func buildInitramfs(path string, p initParams) error {
	bb, err := findStaticBusybox()
	if err != nil {
		return err
	}
	bbBytes, err := os.ReadFile(bb)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	ix, err := loadModIndex(p.kernel.ModDir())
	if err != nil {
		return err
	}
	mods, err := ix.order(p.bootModules...)
	if err != nil {
		return err
	}

	var buf bytes.Buffer
	w := newCPIOWriter(&buf)
	for _, d := range []string{"bin", "sbin", "dev", "proc", "sys", "tmp", "host", "lib", "lib/vmboot"} {
		w.Dir(d)
	}
	w.File("bin/busybox", 0o755, bbBytes)
	w.Symlink("bin/sh", "busybox")
	for i, m := range mods {
		b, err := readModule(filepath.Join(ix.dir, ix.path[m]))
		if err != nil {
			return err
		}
		w.File(fmt.Sprintf("lib/vmboot/%02d-%s.ko", i, m), 0o644, b)
	}
	w.File("sbin/vm-modprobe", 0o755, []byte(modprobeWrapper(p.kernel)))
	w.File("init", 0o755, []byte(initScript(mods, p)))
	if err := w.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return nil
}

// modprobeWrapper runs the host's kmod modprobe, inside the host root, on
// the unpacked distro kernel tree. The kernel's on-demand module loader
// runs it from the initramfs root, which /init never leaves.
func modprobeWrapper(k *Kernel) string {
	return "#!/bin/sh\nexec /bin/chroot /host /sbin/modprobe -d " + shQuote(k.Root) + " \"$@\"\n"
}

func initScript(bootMods []string, p initParams) string {
	var s strings.Builder
	s.WriteString(`#!/bin/sh
export PATH=/bin:/sbin
/bin/busybox --install -s /bin
fail() {
	echo "` + markFail + `$*"
	echo "` + markEnd + `125==="
	sync
	reboot -f
	sleep 60
}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in /lib/vmboot/*.ko; do
	insmod "$m" || fail "insmod $m"
done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose host /host || fail "mount host root over 9p (tag host)"
mount -t tmpfs -o mode=1777 tmpfs /host/tmp || fail "tmpfs on /tmp"
mount -t tmpfs -o mode=755 tmpfs /host/run || fail "tmpfs on /run"
mkdir -p /host/run/vm /host/run/netns /host/run/lock
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 work /host/run/vm || fail "mount work dir over 9p (tag work)"
[ -d /host/var/tmp ] && mount -t tmpfs -o mode=1777 tmpfs /host/var/tmp
`)
	if p.repo != "" {
		fmt.Fprintf(&s, "mkdir -p %[1]s && mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose repo %[1]s || fail \"mount %[2]s over 9p (tag repo)\"\n",
			shQuote("/host"+p.repo), p.repo)
	}
	s.WriteString(`mount -t proc proc /host/proc || fail "proc"
mount -t sysfs sysfs /host/sys || fail "sysfs"
mount -t devtmpfs devtmpfs /host/dev || fail "devtmpfs"
mkdir -p /host/dev/pts /host/dev/shm /host/dev/net
mount -t devpts -o newinstance,ptmxmode=0666 devpts /host/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /host/dev/shm
mount -t bpf bpf /host/sys/fs/bpf
mount -t cgroup2 cgroup2 /host/sys/fs/cgroup 2>/dev/null
echo /sbin/vm-modprobe > /proc/sys/kernel/modprobe
`)
	if len(p.modules) > 0 {
		fmt.Fprintf(&s, "/sbin/vm-modprobe -a %s || fail \"modprobe %s\"\n", strings.Join(p.modules, " "), strings.Join(p.modules, " "))
	}
	s.WriteString("[ -c /host/dev/net/tun ] || mknod /host/dev/net/tun c 10 200\n")
	if p.ko != "" {
		if len(p.koDeps) > 0 {
			fmt.Fprintf(&s, "/sbin/vm-modprobe -a %s || fail \"modprobe %s (needed by %s)\"\n",
				strings.Join(p.koDeps, " "), strings.Join(p.koDeps, " "), p.ko)
		}
		args := make([]string, len(p.koArgs))
		for i, a := range p.koArgs {
			args[i] = shQuote(a)
		}
		fmt.Fprintf(&s, "insmod /host%s %s || fail \"insmod %s\"\n", p.ko, strings.Join(args, " "), p.ko)
	}
	s.WriteString(`ip link set lo up
hostname gtpqos-vm
echo "` + markBegin + `"
chroot /host /bin/sh ` + GuestWorkDir + `/.vm/run.sh </dev/null
rc=$?
echo "` + markEnd + `$rc==="
echo $rc > /host` + GuestWorkDir + `/.vm/rc
dmesg > /host` + GuestWorkDir + `/.vm/dmesg
cat /proc/sys/kernel/tainted > /host` + GuestWorkDir + `/.vm/tainted
sync
umount /host` + GuestWorkDir + `
reboot -f
sleep 60
`)
	_ = bootMods
	return s.String()
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
