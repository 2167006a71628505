package vm

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testModulesDep = `kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko
kernel/net/9p/9pnet.ko:
kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko
kernel/fs/netfs/netfs.ko:
kernel/net/sched/cls_fw.ko:
kernel/drivers/net/gtp-x.ko.xz: kernel/net/ipv4/udp_tunnel.ko
kernel/net/ipv4/udp_tunnel.ko:
`

// TestModIndexOrder checks dependency order, de-duplication, '-'/'_'
// normalisation, built-ins left out and unknown modules reported.
func TestModIndexOrder(t *testing.T) {
	ix := &modIndex{dir: "/m", path: map[string]string{}, deps: map[string][]string{},
		builtin: map[string]bool{"sch_fq_codel": true}}
	if err := ix.parseDep([]byte(testModulesDep)); err != nil {
		t.Fatal(err)
	}
	got, err := ix.order("9p", "sch_fq_codel", "gtp-x", "netfs", "cls_fw")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"9pnet", "netfs", "fscache", "9p", "udp_tunnel", "gtp_x", "cls_fw"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("load order (-want +got):\n%s", d)
	}
	if _, err := ix.order("cls_nope"); err == nil || !strings.Contains(err.Error(), "cls_nope") {
		t.Fatalf("unknown module: err %v, want one naming cls_nope", err)
	}
	if err := ix.parseDep([]byte("no colon here\n")); err == nil {
		t.Fatal("parseDep accepted a line without ':'")
	}
}

// TestKORelease reads vermagic and depends from a real distro module of
// each kernel series in the cache (PrepareKernel puts one there); 6.12's
// modules are .ko.xz and its fscache is part of netfs.
func TestKORelease(t *testing.T) {
	wantDeps := map[string][]string{"6.1": {"9pnet", "netfs", "fscache"}, "6.12": {"9pnet", "netfs"}}
	tested := 0
	for _, s := range allSeries {
		k := newestCachedKernel(CacheDir(), s)
		if k == nil {
			continue
		}
		tested++
		ix, err := loadModIndex(k.ModDir())
		if err != nil {
			t.Fatal(err)
		}
		rel, deps, err := koRelease(filepath.Join(k.ModDir(), ix.path["9p"]))
		if err != nil {
			t.Fatal(err)
		}
		if rel != k.Release {
			t.Errorf("9p vermagic release %q, want %q", rel, k.Release)
		}
		for _, d := range wantDeps[s.name] {
			if !strings.Contains(","+strings.Join(deps, ",")+",", ","+d+",") {
				t.Errorf("%s: 9p depends %v: missing %s", k.Release, deps, d)
			}
		}
		if _, err := ix.order(s.bootModules...); err != nil {
			t.Errorf("%s: boot modules: %v", k.Release, err)
		}
		if _, _, err := koRelease(filepath.Join(k.ModDir(), "modules.dep")); err == nil {
			t.Error("koRelease accepted a non-ELF file")
		}
	}
	if tested == 0 {
		t.Skipf("no unpacked kernel in %s (the VM tests download one)", CacheDir())
	}
}

// TestBootImagePVH checks that the vmlinux extracted from each cached
// kernel's bzImage is an ELF with a PVH entry (what qemu boots directly).
func TestBootImagePVH(t *testing.T) {
	tested := 0
	for _, s := range allSeries {
		k := newestCachedKernel(CacheDir(), s)
		if k == nil {
			continue
		}
		tested++
		img := bootImage(k)
		if img == k.Vmlinuz || !hasPVHEntry(img) {
			t.Errorf("boot image %s: want an extracted vmlinux with a PVH note", img)
		}
		if hasPVHEntry(k.Vmlinuz) {
			t.Errorf("bzImage %s reported as a PVH ELF", k.Vmlinuz)
		}
	}
	if tested == 0 {
		t.Skipf("no unpacked kernel in %s (the VM tests download one)", CacheDir())
	}
}

// TestKernelErrors picks the kernel's bug reports (oops, BUG, faults,
// WARNING, refcount and list corruption, RCU stalls, hung tasks) out of a
// kernel log and leaves ordinary lines and non-kernel (scenario) lines
// alone.
func TestKernelErrors(t *testing.T) {
	log := `[    1.000000] Linux version 6.1.0-57-amd64
[    2.000000] WARNING: CPU: 1 PID: 42 at net/gtp5g/foo.c:12 bar+0x1/0x2 [gtp5g]
[    2.100000] BUG: kernel NULL pointer dereference, address: 0000000000000008
[    2.100000] BUG: kernel NULL pointer dereference, address: 0000000000000008
[    2.200000] Oops: 0000 [#1] PREEMPT SMP NOPTI
[    3.000000] tsc: Marking TSC unstable due to clocksource watchdog
[    4.000000] Kernel panic - not syncing: Fatal exception
[    5.000000] BUG: unable to handle page fault for address: 00007ffd0a1b2000
[    5.100000] general protection fault, probably for non-canonical address 0xdead000000000122: 0000 [#2] PREEMPT SMP NOPTI
[    6.000000] rcu: INFO: rcu_sched self-detected stall on CPU
[    6.100000] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
[    7.000000] INFO: task ip:1234 blocked for more than 120 seconds.
[    7.100000] INFO: task ip:1234 is not blocked (a made-up line that must not match)
[    8.000000] refcount_t: underflow; use-after-free.
[    8.100000] list_add corruption. prev->next should be next (ffff8880), but was dead000000000100.
[    8.200000] list_del corruption, ffff8880.next is LIST_POISON1 (dead000000000100)
[    9.000000] rcu: RCU stall warning made up for the matcher
[    9.100000] rcu: Hierarchical RCU implementation.
[   10.000000] BUG kmalloc-64 (Tainted: G    B      OE     ): Poison overwritten
[   10.100000] BUG kmalloc-96 (Not tainted): Redzone overwritten
[   10.200000] INFO: 0xffff8880 -0xffff8887 @offset=64. First byte 0x0 instead of 0x6b
[   10.300000] FIX kmalloc-64: Restoring Poison 0xffff8880-0xffff8887=0x6b
    seed_test.go:12: BUG: not a kernel line (scenario output)
    seed_test.go:13: list_del corruption in the scenario's own output`
	got := kernelErrors(log)
	want := []string{
		"[    2.000000] WARNING: CPU: 1 PID: 42 at net/gtp5g/foo.c:12 bar+0x1/0x2 [gtp5g]",
		"[    2.100000] BUG: kernel NULL pointer dereference, address: 0000000000000008",
		"[    2.200000] Oops: 0000 [#1] PREEMPT SMP NOPTI",
		"[    4.000000] Kernel panic - not syncing: Fatal exception",
		"[    5.000000] BUG: unable to handle page fault for address: 00007ffd0a1b2000",
		"[    5.100000] general protection fault, probably for non-canonical address 0xdead000000000122: 0000 [#2] PREEMPT SMP NOPTI",
		"[    6.000000] rcu: INFO: rcu_sched self-detected stall on CPU",
		"[    6.100000] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
		"[    7.000000] INFO: task ip:1234 blocked for more than 120 seconds.",
		"[    8.000000] refcount_t: underflow; use-after-free.",
		"[    8.100000] list_add corruption. prev->next should be next (ffff8880), but was dead000000000100.",
		"[    8.200000] list_del corruption, ffff8880.next is LIST_POISON1 (dead000000000100)",
		"[    9.000000] rcu: RCU stall warning made up for the matcher",
		"[   10.000000] BUG kmalloc-64 (Tainted: G    B      OE     ): Poison overwritten",
		"[   10.100000] BUG kmalloc-96 (Not tainted): Redzone overwritten",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("kernelErrors (-want +got):\n%s", d)
	}
}

// TestTaintError names the taint bits a kernel bug report sets and
// ignores those an out-of-tree, unsigned module sets (O, E).
func TestTaintError(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0", ""},
		{"12288", ""}, // O, E: gtp5g loaded
		{"12800", "kernel tainted 12800 after the scenario: W (WARN)"},
		{"12448", "kernel tainted 12448 after the scenario: B (bad page or slab object), D (oops)"},
		{"", ""},
	} {
		if got := taintError(c.in); got != c.want {
			t.Errorf("taintError(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestBugLines picks the kernel's bug reports out of /dev/kmsg messages
// (no timestamp): a WARN's first line, as 6.12's tunnel transmit prints
// for a device whose counters have no type, and an oops, but not the
// message before the WARN or other lines that say WARNING.
func TestBugLines(t *testing.T) {
	lines := []string{
		"iptunnel_xmit_stats pcpu_stat_type=0",
		"WARNING: CPU: 1 PID: 236 at include/net/ip_tunnels.h:683 gtp5g_xmit_skb_ipv4+0x2f1/0x300 [gtp5g]",
		"Modules linked in: gtp5g(OE) udp_tunnel",
		"BUG: kernel NULL pointer dereference, address: 0000000000000008",
		"gtp5g: WARNING: made-up module line without a backtrace",
		"WARNING: CPU 1 made-up line without a PID",
		"No PDR match this skb : teid[64]",
	}
	want := []string{lines[1], lines[3]}
	if d := cmp.Diff(want, bugLines(lines)); d != "" {
		t.Fatalf("bugLines (-want +got):\n%s", d)
	}
}
