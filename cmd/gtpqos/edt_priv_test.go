package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// edtChildEnv carries the device to the child TestIntegrationEdtLeastPrivilege
// re-runs itself as.
const edtChildEnv = "GTPQOS_EDT_PRIV_CHILD_DEV"

// `gtpqos apply` and `reset` with backend edt need CAP_BPF and
// CAP_NET_ADMIN alone: the test binary re-runs itself in the shaped
// device's namespace (nsenter) under setpriv with no other capability (so
// no CAP_SYS_ADMIN: the fq probe cannot make a namespace and reads the
// module files), applies, then resets, and the device is left clean.
// Needs sch_fq (the VM).
func TestIntegrationEdtLeastPrivilege(t *testing.T) {
	if dev := os.Getenv(edtChildEnv); dev != "" {
		edtPrivChild(t, dev)
		return
	}
	testenv.SkipShort(t)
	testenv.RequireCmd(t, "setpriv", "nsenter", "mount")
	p := newEdtPair(t)
	if !p.hasFq(t) {
		t.Skip("needs sch_fq (the Debian VM has it, this kernel has not)")
	}
	mnt := t.TempDir() // a bpffs of the test's own, root's like /sys/fs/bpf
	if out, err := exec.Command("mount", "-t", "bpf", "bpf", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount bpffs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	set := "-all,+bpf,+net_admin"
	cmd := exec.Command("nsenter", "--net=/run/netns/"+p.a.Name, "setpriv", "--inh-caps="+set, "--ambient-caps="+set, "--bounding-set="+set,
		os.Args[0], "-test.run=^TestIntegrationEdtLeastPrivilege$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), edtChildEnv+"="+p.devA, "GTPQOS_BPF_PIN_DIR="+filepath.Join(mnt, "gtpqos"))
	out, _ := cmd.CombinedOutput()
	if !bytes.Contains(out, []byte("edt child: ok")) {
		t.Errorf("with CAP_BPF and CAP_NET_ADMIN only:\n%s", out)
	}
	if d := p.dump(t); strings.Contains(d, "6765:") || strings.Contains(d, "gtpqos") {
		t.Errorf("after the child's reset the device holds:\n%s", d)
	}
}

// edtPrivChild applies the edt flows file on dev and resets it.
func edtPrivChild(t *testing.T, dev string) {
	locks, file := t.TempDir(), writeEdtFlows(t)
	for _, args := range [][]string{
		{"apply", "-f", file, "--dev", dev, "--lock-dir", locks},
		{"reset", "--dev", dev, "--lock-dir", locks},
	} {
		rc, out, errs := runIn(t, nil, args...)
		t.Logf("gtpqos %s: rc %d\n%s%s", args[0], rc, out, errs)
		if rc != 0 {
			t.Fatalf("gtpqos %s failed", args[0])
		}
	}
	t.Log("edt child: ok")
}
