package edt

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/tests/testenv"
)

const childEnv = "GTPQOS_EDT_CAPS_CHILD"

// The pacer loads, takes a flow by mark, one by (TEID, QFI) and one by SDF
// rule and runs
// with CAP_BPF and CAP_NET_ADMIN alone (the test binary re-runs itself
// under setpriv with no other capability in its bounding set); with
// either one missing, Load fails naming it.
func TestCapabilities(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		capsChild(t)
		return
	}
	testenv.RequireRoot(t)
	testenv.RequireCmd(t, "setpriv")
	for _, tc := range []struct {
		caps string
		want string
	}{
		{"bpf,net_admin", "edt child: ok"},
		{"bpf", "missing CAP_NET_ADMIN"},
		{"net_admin", "missing CAP_BPF"},
	} {
		set := "-all"
		for _, c := range strings.Split(tc.caps, ",") {
			set += ",+" + c
		}
		cmd := exec.Command("setpriv", "--inh-caps="+set, "--ambient-caps="+set, "--bounding-set="+set,
			os.Args[0], "-test.run=^TestCapabilities$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=1")
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("with %s: want %q in the child's output:\n%s", tc.caps, tc.want, out)
		}
	}
}

func capsChild(t *testing.T) {
	p, err := Load(LoadOptions{Sessions: 4, Flows: 4, Marks: 4})
	if err != nil {
		t.Logf("edt child: %+v", err) // %+v: the whole verifier log
		return
	}
	defer p.Close()
	if err := p.AddSession(1, 1e6); err != nil {
		t.Fatal(err)
	}
	if err := p.AddFlow(1, FlowSpec{Marks: []uint32{1}, Session: 1, DelayBudget: time.Second}); err != nil {
		t.Fatal(err)
	}
	if ret, _ := runCtx(t, p, newCtx(1, 0), frame(100)); ret != actOK {
		t.Fatalf("verdict %d", ret)
	}
	// Stock gtp5g's packets: found by (TEID, QFI), and a later fragment
	// by its first.
	if err := p.AddFlow(2, FlowSpec{Keys: []Key{{TEID: 100, QFI: 9}}, DelayBudget: time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []gtpuPacket{{teid: 100, qfi: 9, user: 100, ext: true, mf: true, id: 1}, {off: 10, id: 1, user: 100}} {
		if ret, _ := runCtx(t, p, newCtx(0, 0), g.build()); ret != actOK {
			t.Fatalf("GTP-U verdict %d", ret)
		}
	}
	if st, err := p.Flow(2); err != nil || st.Packets != 2 {
		t.Fatalf("flow by key: %+v, %v", st, err)
	}
	// Flows that share (TEID, QFI): found by the session's SDF rules.
	if err := p.SetRules(100, sdfRules(t, map[uint32]uint32{3: 1}, sdfFlow(3, sdfDN, host))); err != nil {
		t.Fatal(err)
	}
	if ret, _ := runCtx(t, p, newCtx(0, 0), gtpuPacket{teid: 100, qfi: 9, inner: innerIPv4(100, 17, sdfDN, sdfUE, 1, 2)}.build()); ret != actOK {
		t.Fatalf("SDF verdict %d", ret)
	}
	if st, err := p.Flow(1); err != nil || st.Packets != 2 {
		t.Fatalf("flow by SDF rule: %+v, %v", st, err)
	}
	t.Log("edt child: ok")
}
