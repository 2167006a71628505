package vm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// harnessScript exercises what scenarios rely on: environment, handed-over
// files, a writable work dir, a read-only host root with writable tmpfs
// /tmp and /run, 'ip netns', on-demand module loading (sch_prio is not
// preloaded), and the exit status.
const harnessScript = `echo "greeting=$GREETING"
echo "pwd=$(pwd)"
echo "file=$(cat $VM_WORK/in/data.txt)"
echo "result from guest" > $VM_WORK/out.txt
if touch /etc/gtpqos-vm-probe 2>/dev/null; then echo rootfs=rw; else echo rootfs=ro; fi
touch /tmp/probe && echo tmp=rw
ip netns add hv$$ && ip netns del hv$$ && echo netns=ok
tc qdisc add dev lo root handle 1: prio && tc qdisc del dev lo root
grep -q '^sch_prio ' /proc/modules && echo autoload=ok
exit 3
`

// TestVMHarness checks the harness contract in one boot: exit status,
// Env, Files, results in WorkDir, guest filesystem layout and on-demand
// module loading.
func TestVMHarness(t *testing.T) {
	in := filepath.Join(t.TempDir(), "data.txt")
	if err := os.WriteFile(in, []byte("host data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := Run(t, Config{
		Script:  harnessScript,
		Env:     map[string]string{"GREETING": "it's ok"},
		Files:   map[string]string{"in/data.txt": in},
		Dir:     "/usr",
		Timeout: 3 * time.Minute,
	})
	if res.ExitCode != 3 {
		t.Errorf("exit code %d, want 3 (the script's)", res.ExitCode)
	}
	for _, want := range []string{"greeting=it's ok", "pwd=/usr", "file=host data", "rootfs=ro", "tmp=rw", "netns=ok", "autoload=ok"} {
		if !strings.Contains(res.Output, want+"\n") {
			t.Errorf("guest output lacks %q:\n%s", want, res.Output)
		}
	}
	b, err := os.ReadFile(filepath.Join(res.WorkDir, "out.txt"))
	if err != nil || string(b) != "result from guest\n" {
		t.Errorf("work dir out.txt = %q, %v; want the guest's line", b, err)
	}
	if !strings.Contains(res.Dmesg, "Linux version "+res.Kernel) {
		t.Errorf("Result.Dmesg lacks the guest's boot banner (%d bytes)", len(res.Dmesg))
	}
	if _, err := os.Stat("/etc/gtpqos-vm-probe"); err == nil {
		t.Errorf("guest wrote to the host's /etc")
	}
}

// TestVMTimeoutKillsQEMU checks that a scenario overrunning its timeout
// fails the run with a clear error and leaves no qemu behind.
func TestVMTimeoutKillsQEMU(t *testing.T) {
	Require(t)
	work := t.TempDir()
	start := time.Now()
	_, err := RunContext(context.Background(), work, Config{Script: "sleep 600", Timeout: 15 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "timed out after 15s") {
		t.Fatalf("RunContext error %v, want a timeout", err)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("run took %s after a 15s timeout", d)
	}
	if pids := qemuUsing(work); len(pids) > 0 {
		t.Fatalf("qemu still running for %s: pids %v", work, pids)
	}
}

// qemuUsing lists processes whose command line mentions dir.
func qemuUsing(dir string) []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), "qemu") && strings.Contains(string(b), dir) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// TestVMLoadsKO checks the Config.KO path (as used with GTP5G_KO) with a
// distro module standing in for gtp5g.ko: wireguard.ko, whose
// dependencies (crypto libraries) are not preloaded. The module's
// vermagic selects the kernel, its deps are loaded, and a device of its
// type can be created.
func TestVMLoadsKO(t *testing.T) {
	Require(t)
	k, err := PrepareKernel(context.Background(), CacheDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	ix, err := loadModIndex(k.ModDir())
	if err != nil {
		t.Fatal(err)
	}
	// wireguard.ko on 6.1, wireguard.ko.xz on 6.12.
	src := filepath.Join(k.ModDir(), ix.path["wireguard"])
	ko := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := copyFile(src, ko); err != nil {
		t.Fatal(err)
	}
	res := Run(t, Config{
		KO:      ko,
		Script:  "grep -E '^(wireguard|libchacha20poly1305) ' /proc/modules | cut -d' ' -f1 | sort\nip link add wgt0 type wireguard && echo link=ok\n",
		Timeout: 3 * time.Minute,
	})
	if res.Kernel != k.Release {
		t.Errorf("booted %s, want %s (the module's vermagic)", res.Kernel, k.Release)
	}
	for _, want := range []string{"libchacha20poly1305", "wireguard", "link=ok"} {
		if !strings.Contains(res.Output, want+"\n") {
			t.Errorf("guest output lacks %q:\n%s", want, res.Output)
		}
	}
	if res.ExitCode != 0 {
		t.Errorf("scenario exited %d", res.ExitCode)
	}
}
