package vm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// interrupted is set once a run was stopped by SIGINT/SIGTERM (or a
// cancelled context), so that later tests do not boot another VM.
var interrupted atomic.Bool

// guestPath is the script's PATH in the guest.
const guestPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin"

// RunContext boots the guest, runs cfg.Script and returns the result. It
// uses workDir (which must exist and be empty) as the read-write share.
// A scenario that exits non-zero is not an error; failing to boot, to set
// up the guest or to finish before the timeout (or ctx, or SIGINT/SIGTERM)
// is. qemu never outlives the call.
func RunContext(ctx context.Context, workDir string, cfg Config) (*Result, error) {
	if cfg.Script == "" {
		return nil, errors.New("vm: Config.Script is empty")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.CPUs <= 0 {
		cfg.CPUs = 2
	}
	if cfg.MemoryMiB <= 0 {
		cfg.MemoryMiB = 2048
	}
	if cfg.Dir == "" {
		cfg.Dir = GuestWorkDir
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	p := initParams{modules: append(append([]string{}, DefaultModules...), cfg.Modules...), repo: repoUnderTmpfs()}
	release := cfg.KernelRelease
	if cfg.KO != "" {
		rel, deps, err := koRelease(cfg.KO)
		if err != nil {
			return nil, err
		}
		if release != "" && release != rel {
			return nil, fmt.Errorf("vm: %s is built for kernel %s, but KernelRelease is %s", cfg.KO, rel, release)
		}
		release, p.koDeps, p.koArgs = rel, deps, cfg.KOArgs
	}
	s, err := pickSeries(cfg.KernelSeries, release)
	if err != nil {
		return nil, err
	}
	k, err := prepareKernel(ctx, CacheDir(), s, release)
	if err != nil {
		return nil, err
	}
	p.kernel, p.bootModules = k, s.bootModules

	meta := filepath.Join(workDir, ".vm")
	if err := os.MkdirAll(meta, 0o755); err != nil {
		return nil, fmt.Errorf("vm work dir: %w", err)
	}
	if cfg.KO != "" {
		name, err := copyModule(cfg.KO, meta)
		if err != nil {
			return nil, err
		}
		p.ko = GuestWorkDir + "/.vm/" + name
	}
	for name, src := range cfg.Files {
		if filepath.IsAbs(name) || strings.Contains(name, "..") {
			return nil, fmt.Errorf("vm: Files key %q: want a relative name under %s", name, GuestWorkDir)
		}
		if err := copyFile(src, filepath.Join(workDir, name)); err != nil {
			return nil, err
		}
	}
	if err := writeScripts(meta, cfg); err != nil {
		return nil, err
	}
	initrd := filepath.Join(meta, "initramfs.cpio")
	if err := buildInitramfs(initrd, p); err != nil {
		return nil, err
	}
	res, err := runQEMU(ctx, k, initrd, workDir, p.repo, cfg)
	if (errors.Is(err, errSilentBoot) || errors.Is(err, errBootPanic) || errors.Is(err, errBootStall)) && ctx.Err() == nil {
		// Rarely a TCG guest hangs before its first console line, its
		// kernel panics while booting, before any module is loaded (6.12:
		// an oops in the timer code, as if an instruction the kernel was
		// patching on another CPU ran half written), or its timers stop
		// while it boots (an RCU stall). The guest ran nothing of the
		// scenario, so booting it again is the same run; the first boot
		// is kept in Result.Retried.
		first := err
		res, err = runQEMU(ctx, k, initrd, workDir, p.repo, cfg)
		if res != nil {
			res.Retried = first.Error()
		}
	}
	if res != nil {
		res.Kernel = k.Release
		res.WorkDir = workDir
	}
	return res, err
}

func writeScripts(meta string, cfg Config) error {
	env := map[string]string{
		"PATH": guestPath, "HOME": "/tmp", "TMPDIR": "/tmp", "LC_ALL": "C",
		"GTPQOS_IN_VM": "1", "VM_WORK": GuestWorkDir,
	}
	for k, v := range cfg.Env {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var run strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&run, "export %s=%s\n", k, shQuote(env[k]))
	}
	fmt.Fprintf(&run, "cd %s || exit 126\nexec /bin/sh %s/.vm/scenario.sh 2>&1\n", shQuote(cfg.Dir), GuestWorkDir)
	if err := os.WriteFile(filepath.Join(meta, "run.sh"), []byte(run.String()), 0o755); err != nil {
		return fmt.Errorf("vm work dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(meta, "scenario.sh"), []byte(cfg.Script), 0o755); err != nil {
		return fmt.Errorf("vm work dir: %w", err)
	}
	return nil
}

// repoUnderTmpfs returns the module root above the working directory when
// it lies under a directory the guest covers with tmpfs (/tmp, /run,
// /var/tmp), else "". Such a checkout (a CI clone in /tmp, say) would be
// invisible in the guest, so Run shares it again at the same path.
func repoUnderTmpfs() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := dir; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err != nil {
			continue
		}
		for _, t := range []string{"/tmp/", "/run/", "/var/tmp/"} {
			if strings.HasPrefix(d+"/", t) {
				return d
			}
		}
		return ""
	}
	return ""
}

// silentBootLimit is how long a guest may print nothing at all: the first
// line comes within seconds (about 40 s at load 10).
const silentBootLimit = 90 * time.Second

// errSilentBoot is a guest that printed nothing before silentBootLimit.
var errSilentBoot = errors.New("vm guest hung before its first console line")

// errBootPanic is a guest kernel that panicked before the scenario began
// and before any module was loaded (bootPanic).
var errBootPanic = errors.New("vm guest kernel panicked while booting, before any module was loaded")

// errBootStall is a guest whose kernel reported an RCU stall before the
// scenario began (bootStallLine).
var errBootStall = errors.New("vm guest kernel stalled while booting (RCU stall before the scenario began)")

// bootStallLine starts the kernel's RCU stall report. Before the scenario
// it has meant a TCG guest whose timers stopped firing on a CPU while it
// booted ("timer wakeup didn't happen"), which then never reached the
// scenario.
const bootStallLine = "rcu: INFO: rcu_preempt detected stalls"

// bootPanic reports whether console shows a kernel panic whose report
// lists no loaded module: the kernel's own boot, not a module of ours or
// the scenario.
func bootPanic(console string) bool {
	if !strings.Contains(console, "Kernel panic - not syncing") {
		return false
	}
	for _, l := range strings.Split(console, "\n") {
		if _, mods, ok := strings.Cut(l, "Modules linked in:"); ok && strings.TrimSpace(mods) != "" {
			return false
		}
	}
	return strings.Contains(console, "Modules linked in:")
}

func runQEMU(ctx context.Context, k *Kernel, initrd, workDir, repo string, cfg Config) (*Result, error) {
	args := []string{
		"-accel", "tcg", "-cpu", "max",
		"-smp", strconv.Itoa(cfg.CPUs), "-m", strconv.Itoa(cfg.MemoryMiB),
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-serial", "stdio",
		"-kernel", bootImage(k), "-initrd", initrd,
		"-append", strings.Join(append([]string{"console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init tsc=reliable mitigations=off"},
			cfg.KernelArgs...), " "),
		"-virtfs", "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap",
		"-virtfs", "local,path=" + workDir + ",mount_tag=work,security_model=none,multidevs=remap",
	}
	if repo != "" {
		args = append(args, "-virtfs", "local,path="+repo+",mount_tag=repo,security_model=none,readonly=on,multidevs=remap")
	}
	cmd := exec.Command("qemu-system-x86_64", args...)
	// Pdeathsig fires when the thread that forked qemu exits: keep this
	// goroutine on its thread until qemu is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start qemu-system-x86_64: %w", err)
	}
	// Kill qemu when the context ends; the pipe then closes and the reader
	// below returns.
	done := make(chan struct{})
	var killOnce sync.Once
	go func() {
		select {
		case <-ctx.Done():
			killOnce.Do(func() { _ = cmd.Process.Kill() })
		case <-done:
		}
	}()

	// A guest silent for silentBootLimit has hung before its first line.
	var anyLine, silent atomic.Bool
	watchdog := time.AfterFunc(silentBootLimit, func() {
		if !anyLine.Load() {
			silent.Store(true)
			killOnce.Do(func() { _ = cmd.Process.Kill() })
		}
	})
	defer watchdog.Stop()

	res := &Result{ExitCode: -1}
	var console, output strings.Builder
	var began, ended, stalled bool
	var beginAt time.Time
	failMsg := ""
	br := bufio.NewReader(stdout)
	for {
		line, rerr := br.ReadString('\n')
		if line != "" {
			anyLine.Store(true)
			line = strings.TrimRight(line, "\r\n")
			console.WriteString(line + "\n")
			switch {
			case !began && strings.Contains(line, bootStallLine):
				// The guest's timers stopped while it booted (TCG): it
				// would sit out the whole timeout.
				stalled = true
				killOnce.Do(func() { _ = cmd.Process.Kill() })
			case !began && strings.Contains(line, markBegin):
				began, beginAt = true, time.Now()
				res.Boot = beginAt.Sub(start)
			case strings.HasPrefix(line, markFail):
				failMsg = strings.TrimPrefix(line, markFail)
			case strings.Contains(line, markEnd):
				if i := strings.Index(line, markEnd); i >= 0 {
					rc := strings.TrimSuffix(line[i+len(markEnd):], "===")
					if n, err := strconv.Atoi(rc); err == nil {
						res.ExitCode, ended = n, true
					}
					if i > 0 && began {
						output.WriteString(line[:i] + "\n")
					}
				}
				if began {
					res.Scenario = time.Since(beginAt)
				}
			case began && !ended:
				output.WriteString(line + "\n")
				if cfg.Stream != nil {
					_, _ = io.WriteString(cfg.Stream, line+"\n")
				}
			}
		}
		if rerr != nil {
			break
		}
	}
	werr := cmd.Wait()
	close(done)
	res.Console, res.Output = console.String(), output.String()
	if !ended {
		if b, err := os.ReadFile(filepath.Join(workDir, ".vm", "rc")); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				res.ExitCode, ended = n, true
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(workDir, ".vm", "dmesg")); err == nil {
		res.Dmesg = string(b)
	}
	// A panic reaches the console only; the oops/BUG lines before it too.
	res.KernelErrors = kernelErrors(res.Dmesg + "\n" + res.Console)
	if b, err := os.ReadFile(filepath.Join(workDir, ".vm", "tainted")); err == nil {
		if e := taintError(strings.TrimSpace(string(b))); e != "" {
			res.KernelErrors = append(res.KernelErrors, e)
		}
	}
	switch {
	case silent.Load():
		return res, fmt.Errorf("%w: nothing on the console in %s (qemu killed)", errSilentBoot, silentBootLimit)
	case failMsg != "":
		return res, fmt.Errorf("vm guest setup failed (kernel %s): %s\n%s", k.Release, failMsg, tail(res.Console, 30))
	case ctx.Err() != nil && !ended:
		what := "timed out after " + cfg.Timeout.String()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			what = "interrupted"
			interrupted.Store(true)
		}
		stage := "booting"
		if began {
			stage = "running the scenario"
		}
		return res, fmt.Errorf("vm guest %s while %s (qemu killed); console tail:\n%s", what, stage, tail(res.Console, 30))
	case stalled:
		return res, fmt.Errorf("%w; console tail:\n%s", errBootStall, tail(res.Console, 30))
	case !ended && !began && bootPanic(res.Console):
		return res, fmt.Errorf("%w; console tail:\n%s", errBootPanic, tail(res.Console, 30))
	case !ended:
		return res, fmt.Errorf("vm guest stopped without reporting an exit code (qemu: %v %s); console tail:\n%s",
			werr, strings.TrimSpace(stderr.String()), tail(res.Console, 30))
	}
	return res, nil
}

// copyModule copies a kernel module into dir, decompressed if it is a
// .ko.xz, .ko.zst or .ko.gz (busybox insmod takes a plain .ko), and
// returns its name there.
func copyModule(ko, dir string) (string, error) {
	name := filepath.Base(ko)
	if strings.HasSuffix(name, ".ko") {
		return name, copyFile(ko, filepath.Join(dir, name))
	}
	b, err := readModule(ko)
	if err != nil {
		return "", err
	}
	name = modName(name) + ".ko"
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		return "", fmt.Errorf("vm: hand module to guest: %w", err)
	}
	return name, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("vm: hand file to guest: %w", err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return fmt.Errorf("vm: hand file to guest: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("vm: hand file to guest: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, st.Mode().Perm()|0o400)
	if err != nil {
		return fmt.Errorf("vm: hand file to guest: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("vm: copy %s to guest: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("vm: copy %s to guest: %w", src, err)
	}
	return nil
}

var (
	// kernelErrorRE matches the kernel's reports of a bug: oopses and
	// faults, warnings (a WARN's first line, which a backtrace follows,
	// not other lines that say WARNING), sanitizers, refcount and list
	// corruption, RCU stalls and hung tasks.
	// SLUB's debug checks (slub_debug=FZP) report a poisoned or red-zoned
	// object overwritten as "BUG kmalloc-64 (Tainted: G O): Poison
	// overwritten", with no colon after BUG.
	kernelErrorRE = regexp.MustCompile(`\b(BUG:|BUG [\w.-]+ \((Not tainted|Tainted: [^)]*)\): |Oops|WARNING: CPU: [0-9]+ PID: [0-9]+|general protection fault|Kernel panic|KASAN:|UBSAN:|kernel BUG at|refcount_t:|` +
		`list_add corruption|list_del corruption|self-detected stall|detected stalls on CPUs|RCU stall|INFO: task \S+ blocked for more than)`)
	// printkRE matches a kernel log line's timestamp, so that scenario
	// output on the console is not mistaken for kernel messages.
	printkRE = regexp.MustCompile(`^\[\s*[0-9]+\.[0-9]+\] `)
)

// taintFlags are the taint bits a kernel bug report sets, by bit number:
// the report itself may have left the log ring before it was read, the
// taint stays. Loading gtp5g sets O and E only.
var taintFlags = []struct {
	bit  uint
	flag string
	what string
}{
	{4, "M", "machine check"},
	{5, "B", "bad page or slab object"},
	{7, "D", "oops"},
	{9, "W", "WARN"},
	{14, "L", "soft lockup"},
}

// taintError describes a guest's /proc/sys/kernel/tainted value that a
// kernel bug report set, or returns "" for none (or an unreadable value).
func taintError(v string) string {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return ""
	}
	var set []string
	for _, f := range taintFlags {
		if n&(1<<f.bit) != 0 {
			set = append(set, f.flag+" ("+f.what+")")
		}
	}
	if len(set) == 0 {
		return ""
	}
	return "kernel tainted " + v + " after the scenario: " + strings.Join(set, ", ")
}

// kernelErrors returns the distinct kernel log lines that report a bug.
func kernelErrors(log string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(log, "\n") {
		if printkRE.MatchString(l) && kernelErrorRE.MatchString(l) && !seen[l] {
			seen[l] = true
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}
