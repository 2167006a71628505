package stock

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
	"github.com/free5gc/gtpqos/tests/testenv"
	"github.com/free5gc/gtpqos/tests/vm"
)

// Seed figures (bit/s before the lab's rate scale).
const (
	linkRate = 30e6
	payload  = lab.DefaultPayload
	// frame is the N3 Ethernet frame of one payload-sized datagram: inner
	// IPv4+UDP (28) plus N3 overhead.
	frame = payload + 28 + lab.N3Overhead
)

// contract is a flow's GBR and MBR in bit/s (before scaling).
type contract struct{ gbr, mbr float64 }

// newLab builds an unmarked lab (stock gtp5g behaviour) and removes it when
// the test ends.
func newLab(t *testing.T, pdrs []lab.PDR) *lab.Lab {
	t.Helper()
	testenv.RequireRoot(t)
	l, err := lab.New(lab.Config{PDRs: pdrs, NoMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close lab: %v", err)
		}
	})
	return l
}

// flowsFor turns the lab's PDRs into downlink shaper flows with the given
// contracts, keyed for the stock classifier by the FAR's TEID and the QFI.
// Marks are left out: stock gtp5g sets none.
func flowsFor(l *lab.Lab, contracts map[string]contract) []shaper.Flow {
	var out []shaper.Flow
	for _, p := range l.PDRs() {
		c := contracts[p.Name]
		out = append(out, shaper.Flow{
			ID: shaper.FlowID{SEID: p.SEID, QERID: p.QERID}, Name: p.Name, QFI: p.QFI,
			Direction: shaper.Downlink, GBR: uint64(c.gbr * l.Scale()), MBR: uint64(c.mbr * l.Scale()),
			TEID: p.TEID,
		})
	}
	return out
}

// shaped is an aware HTB tree on the lab's N3 with the gtpu classifier.
type shaped struct {
	tree *plan.Tree
	rec  *htb.Reconciler
	cls  *gtpu.Classifier
	res  htb.Result
}

// shape plans and reconciles an aware tree on N3 classified by gtpu. It
// skips when the kernel refuses the BPF program.
func shape(t *testing.T, l *lab.Lab, flows []shaper.Flow, qfiOnly bool) *shaped {
	t.Helper()
	pol := plan.DefaultPolicy(uint64(linkRate * l.Scale()))
	pol.Classifier = classify.KindGTPU
	tree, problems := plan.Plan(flows, pol, nil)
	for _, p := range problems {
		t.Logf("plan: %v", p)
	}
	if tree == nil {
		t.Fatal("plan refused the flows")
	}
	h := l.UPFNetlink()
	cls := gtpu.New(gtpu.Options{N3: lab.N3Dev, QFIOnly: qfiOnly})
	rec := htb.NewReconciler(h, lab.N3Dev, htb.Options{Custom: cls.Downlink(), NetNS: l.UPFNetNS()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := rec.Reconcile(ctx, tree)
	t.Cleanup(func() {
		_ = rec.Reset(context.Background())
		rec.Close()
		_ = cls.Close(h)
	})
	if err != nil {
		if os.Geteuid() == 0 && cls.Objects() == nil {
			t.Skipf("kernel refuses the gtpu BPF program: %v", err)
		}
		t.Fatal(err)
	}
	t.Logf("%v", res)
	return &shaped{tree: tree, rec: rec, cls: cls, res: res}
}

// run drives UDP traffic (seed: 1200-byte datagrams, 30 Mbit/s offered
// per flow) and returns each flow's mean goodput in bit/s over the
// intervals left after trimming head and tail seconds.
func run(t *testing.T, l *lab.Lab, d time.Duration, head, tail int) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	res, err := l.Run(ctx, lab.TrafficSpec{Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range res {
		iv := f.Intervals
		if len(iv) > head+tail {
			iv = iv[head : len(iv)-tail]
		}
		var sum float64
		for _, x := range iv {
			sum += x.Mbps
		}
		out[f.Name] = sum / float64(len(iv)) * 1e6
	}
	return out
}

// classPackets returns each flow's class packet count, by flow name.
func (s *shaped) classPackets(t *testing.T) (map[string]uint64, uint64) {
	t.Helper()
	st, err := s.rec.ClassStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, c := range s.tree.FlowClasses() {
		out[c.Name] = st[s.tree.ClassID(c.Minor)].Packets
	}
	return out, st[s.tree.ClassID(s.tree.DefaultMinor)].Packets
}

func mbit(bps float64) string { return fmt.Sprintf("%.3f Mbit/s", bps/1e6) }

// runGuest boots the Debian guest with $GTP5G_KO (and the GTP-U
// classifier's modules), runs this package's test binary there with
// -test.run ^guest$ and env, hands it files, and fails unless guest passed.
func runGuest(t *testing.T, guest string, env, files map[string]string, timeout time.Duration) {
	t.Helper()
	ko := vm.RequireKO(t)
	bin := vm.BuildTestBinary(t, "./tests/stock/")
	name := strings.ToLower(guest) + ".test"
	all := map[string]string{name: bin.HostPath}
	for k, v := range files {
		all[k] = v
	}
	res := vm.Run(t, vm.Config{
		Script: "set -e\n" + bin.Script(name, "-test.run", "^"+guest+"$", "-test.v", "-test.count=1",
			"-test.timeout", (timeout-2*time.Minute).String()) + "\n",
		Env:     env,
		Files:   all,
		KO:      ko,
		Modules: []string{"sch_ingress", "cls_bpf"},
		Timeout: timeout,
	})
	if res.ExitCode != 0 || !strings.Contains(res.Output, "--- PASS: "+guest+" ") {
		t.Fatalf("guest scenario %s failed (exit %d); see the guest: lines above", guest, res.ExitCode)
	}
}
