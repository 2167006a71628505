// Package privilege runs gtpqos with exactly the documented capabilities,
// and with one capability fewer: as uid 65534 holding them ambient (the
// systemd unit) and as uid 0 holding nothing else (a free5gc-compose or
// Helm sidecar).
package privilege

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/tests/testenv"
)

const (
	dev    = "gqp0"
	nobody = "65534"
)

// seed is the seed experiment's three flows: with no cls_fw in the kernel
// (or with classifier bpf) they need the BPF classifier.
const seed = `link: 30mbit
policy: {mode: aware, classifier: bpf}
flows:
  - {name: A, seid: 1, qer: 1, qfi: 2, direction: downlink, gbr: 15mbit, mbr: 18mbit, mark: 2}
  - {name: B, seid: 1, qer: 2, qfi: 3, direction: downlink, gbr: 5mbit, mbr: 6mbit, mark: 3}
  - {name: C, seid: 1, qer: 3, qfi: 4, direction: downlink, gbr: 0, mbr: 30mbit, mark: 4}
`

// The gtpqos binary every test runs, built once for the package (in a
// directory uid 65534 can read) and removed after the last test.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	rc := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(rc)
}

// gtpqosBinary builds cmd/gtpqos on its first call and returns its path.
func gtpqosBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "gtpqos-privilege-bin-"); buildErr != nil {
			return
		}
		_ = os.Chmod(binDir, 0o755)
		_, file, _, _ := runtime.Caller(0)
		bin := filepath.Join(binDir, "gtpqos")
		// No symbol table or DWARF: half the link's time, and the
		// tests never read them.
		build := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "./cmd/gtpqos")
		build.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build gtpqos: %v\n%s", err, out)
			return
		}
		binPath = bin
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type env struct {
	t              *testing.T
	ns             *testenv.NetNS
	bin, dir, pins string
	locks, flows   string
	// uid runs the commands (as); "" is 65534.
	uid string
}

func newEnv(t *testing.T) *env {
	testenv.RequireRoot(t)
	testenv.RequireCmd(t, "ip", "tc", "setpriv", "go")
	e := &env{t: t, ns: testenv.NewNetNS(t)}
	// No IPv6 on the veths: a router solicitation landing in the default
	// class while the flows count nothing makes verify fail.
	e.ns.Run(t, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6")
	e.ns.AddVethPair(t, dev, "gqp1")
	var err error
	if e.dir, err = os.MkdirTemp("", "gtpqos-privilege-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(e.dir) })
	_ = os.Chmod(e.dir, 0o755)
	e.bin = gtpqosBinary(t)
	// A bpffs of the test's own, as a container gets one bind-mounted.
	mnt := filepath.Join(e.dir, "bpffs")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "bpf", "bpf", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount a bpffs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	e.pins = filepath.Join(mnt, "gtpqos")
	e.locks = filepath.Join(e.dir, "locks")
	if err := os.Mkdir(e.locks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(e.locks, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	e.flows = filepath.Join(e.dir, "flows.yaml")
	if err := os.WriteFile(e.flows, []byte(seed), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// identities are the two ways gtpqos runs with exactly its capabilities:
// the systemd unit's (its own uid, the capabilities ambient) and a
// container's (uid 0 with every other capability dropped: runtimes give
// cap_add to uid 0 only and set no ambient capabilities).
var identities = []struct{ name, uid string }{
	{"uid65534-ambient", nobody},
	{"uid0-bounding", "0"},
}

// capFlags are setpriv's flags for exactly caps (names like "net_admin")
// as uid: ambient capabilities for a uid other than 0; for uid 0 the
// bounding set alone, which its exec turns into the permitted and
// effective sets, as a container's start does.
func capFlags(uid string, caps []string) []string {
	set := "-all"
	for _, c := range caps {
		set += ",+" + c
	}
	flags := []string{"--reuid", uid, "--regid", uid, "--clear-groups"}
	if uid == "0" {
		return append(flags, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set="+set)
	}
	return append(flags, "--inh-caps="+set, "--ambient-caps="+set, "--bounding-set="+set)
}

// documented is classify.DeployCaps in setpriv's spelling.
func documented() []string {
	var out []string
	for _, n := range classify.CapNames(classify.DeployCaps) {
		out = append(out, strings.ToLower(strings.TrimPrefix(n, "CAP_")))
	}
	return out
}

// runAs makes uid run the commands, owning the lock directory as a
// container's tmpfs or the unit's RuntimeDirectory is owned.
func (e *env) runAs(uid string) {
	e.uid = uid
	n, _ := strconv.Atoi(uid)
	if err := os.Chown(e.locks, n, n); err != nil {
		e.t.Fatal(err)
	}
}

// as runs gtpqos in the namespace as e.uid (65534 unless set) with caps.
func (e *env) as(caps []string, args ...string) (string, int) {
	uid := e.uid
	if uid == "" {
		uid = nobody
	}
	full := append([]string{"netns", "exec", e.ns.Name, "setpriv"}, capFlags(uid, caps)...)
	full = append(full, e.bin)
	full = append(full, args...)
	cmd := exec.Command("ip", full...)
	cmd.Env = append(os.Environ(), "GTPQOS_BPF_PIN_DIR="+e.pins)
	out, err := cmd.CombinedOutput()
	rc := 0
	if err != nil {
		rc = -1
		if ee, ok := err.(*exec.ExitError); ok {
			rc = ee.ExitCode()
		}
	}
	return string(out), rc
}

func (e *env) tree() string {
	return e.ns.Run(e.t, "tc", "qdisc", "show", "dev", dev) + e.ns.Run(e.t, "tc", "class", "show", "dev", dev) +
		e.ns.Run(e.t, "tc", "filter", "show", "dev", dev)
}

func (e *env) pinned() []string {
	var out []string
	_ = filepath.WalkDir(e.pins, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestDocumentedCapabilities runs every command with the documented
// capabilities, as each of identities: a second apply and reset adopt the
// classifier through its pins (no CAP_SYS_ADMIN), and reset removes them.
func TestDocumentedCapabilities(t *testing.T) { asEachIdentity(t, documentedCapabilities) }

// asEachIdentity runs check in a fresh namespace as each of identities.
func asEachIdentity(t *testing.T, check func(*testing.T, *env)) {
	for _, id := range identities {
		t.Run(id.name, func(t *testing.T) {
			e := newEnv(t)
			e.runAs(id.uid)
			check(t, e)
		})
	}
}

func documentedCapabilities(t *testing.T, e *env) {
	caps := documented()
	apply := []string{"apply", "-f", e.flows, "--dev", dev, "--lock-dir", e.locks}
	if out, rc := e.as(caps, apply...); rc != 0 {
		t.Fatalf("apply with %v: rc %d\n%s", caps, rc, out)
	}
	if n := len(e.pinned()); n != 2 {
		t.Fatalf("after apply: %d pins under %s, want the program and its map: %v", n, e.pins, e.pinned())
	}
	if !strings.Contains(e.tree(), "gtpqos_mark24") {
		t.Fatalf("no cls_bpf classifier after apply:\n%s", e.tree())
	}
	out, rc := e.as(caps, apply...)
	if rc != 0 || !strings.Contains(out, "in sync") {
		t.Fatalf("second apply (adopting by pin): rc %d\n%s", rc, out)
	}
	if out, rc := e.as(caps, "verify", "--dev", dev, "--interval", "100ms"); rc != 0 {
		t.Fatalf("verify: rc %d\n%s", rc, out)
	}
	// Without gtp5g, status says so and exits 1; it must not be refused.
	out, _ = e.as(caps, "status", "--n3", dev, "--interval", "0", "--lock-dir", e.locks)
	if strings.Contains(out, "not permitted") || strings.Contains(out, "CAP_") {
		t.Fatalf("status refused a capability:\n%s", out)
	}
	// watch gets as far as looking for gtp5g (absent here): the
	// capabilities pass.
	out, _ = e.as(caps, "watch", "--n3", dev, "--link-rate", "30mbit", "--lock-dir", e.locks, "--metrics-addr", "off", "--classifier", "bpf")
	if strings.Contains(out, "not permitted") || strings.Contains(out, "CAP_") {
		t.Fatalf("watch refused a capability:\n%s", out)
	}
	if out, rc := e.as(caps, "reset", "--dev", dev, "--lock-dir", e.locks); rc != 0 {
		t.Fatalf("reset: rc %d\n%s", rc, out)
	}
	if strings.Contains(e.tree(), "htb") {
		t.Fatalf("tree left after reset:\n%s", e.tree())
	}
	if p := e.pinned(); len(p) != 0 {
		t.Fatalf("pins left after reset: %v", p)
	}
}

// TestOneCapabilityFewer drops each documented capability in turn, as each
// of identities: apply fails with one line naming it, before any write.
func TestOneCapabilityFewer(t *testing.T) { asEachIdentity(t, oneCapabilityFewer) }

func oneCapabilityFewer(t *testing.T, e *env) {
	all := documented()
	for i, missing := range all {
		caps := append(append([]string{}, all[:i]...), all[i+1:]...)
		before := e.tree()
		out, rc := e.as(caps, "apply", "-f", e.flows, "--dev", dev, "--lock-dir", e.locks)
		if rc == 0 {
			t.Fatalf("apply without %s succeeded:\n%s", missing, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 1 || !strings.Contains(out, "CAP_"+strings.ToUpper(missing)) {
			t.Errorf("apply without %s: want one line naming CAP_%s, got:\n%s", missing, strings.ToUpper(missing), out)
		}
		if after := e.tree(); after != before {
			t.Errorf("apply without %s changed the tree:\nbefore:\n%s\nafter:\n%s", missing, before, after)
		}
		if p := e.pinned(); len(p) != 0 {
			t.Errorf("apply without %s left pins: %v", missing, p)
		}
	}
}

// TestPlantedPinIsNotFollowed plants a symlink where the program's pin
// goes: apply refuses it in one line and writes nothing.
func TestPlantedPinIsNotFollowed(t *testing.T) {
	e := newEnv(t)
	caps := documented()
	if out, rc := e.as(caps, "apply", "-f", e.flows, "--dev", dev, "--lock-dir", e.locks); rc != 0 {
		t.Fatalf("apply: rc %d\n%s", rc, out)
	}
	pins := e.pinned()
	if len(pins) != 2 {
		t.Fatalf("pins: %v", pins)
	}
	if out, rc := e.as(caps, "reset", "--dev", dev, "--lock-dir", e.locks); rc != 0 {
		t.Fatalf("reset: rc %d\n%s", rc, out)
	}
	// The device's directory came back empty; plant as its owner would.
	dir := filepath.Dir(pins[0])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{e.pins, filepath.Dir(dir), dir} {
		_ = os.Chown(d, 65534, 65534)
	}
	victim := filepath.Join(e.dir, "victim")
	if err := os.WriteFile(victim, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "gtpqos_mark24")); err != nil {
		t.Fatal(err)
	}
	before := e.tree()
	out, rc := e.as(caps, "apply", "-f", e.flows, "--dev", dev, "--lock-dir", e.locks)
	if rc == 0 || !strings.Contains(out, "symlink") && !strings.Contains(out, "not a pinned object") {
		t.Fatalf("apply with a planted symlink pin: rc %d\n%s", rc, out)
	}
	if after := e.tree(); after != before {
		t.Errorf("apply changed the tree:\n%s", after)
	}
	if b, _ := os.ReadFile(victim); string(b) != "x" {
		t.Errorf("the symlink's target changed: %q", b)
	}
}

// TestAutoFallsBackCleanly asks for classifier auto with CAP_NET_ADMIN
// alone on a kernel without cls_fw: auto can only pick bpf, which needs
// CAP_BPF. The run fails naming it, and the root it made while picking
// goes again: the device is as before.
func TestAutoFallsBackCleanly(t *testing.T) {
	e := newEnv(t)
	e.ns.Run(t, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb")
	_, fwErr := e.ns.Try("tc", "filter", "add", "dev", dev, "parent", "1:", "protocol", "all", "prio", "1", "fw")
	e.ns.Run(t, "tc", "qdisc", "del", "dev", dev, "root")
	if fwErr == nil {
		t.Skip("this kernel has cls_fw: auto picks fw, which CAP_NET_ADMIN alone runs")
	}
	auto := strings.Replace(seed, "classifier: bpf", "classifier: auto", 1)
	if err := os.WriteFile(e.flows, []byte(auto), 0o644); err != nil {
		t.Fatal(err)
	}
	before := e.tree()
	out, rc := e.as([]string{"net_admin"}, "apply", "-f", e.flows, "--dev", dev, "--lock-dir", e.locks)
	if rc == 0 || !strings.Contains(out, "CAP_BPF") {
		t.Fatalf("auto with CAP_NET_ADMIN alone: rc %d, want a line naming CAP_BPF:\n%s", rc, out)
	}
	if after := e.tree(); after != before {
		t.Errorf("the device changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
