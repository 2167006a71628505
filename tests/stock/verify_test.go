package stock

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// gtpqosBinary builds cmd/gtpqos into a temporary directory.
func gtpqosBinary(t *testing.T) string {
	t.Helper()
	testenv.RequireCmd(t, "go", "ip")
	bin := filepath.Join(t.TempDir(), "gtpqos")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/free5gc/gtpqos/cmd/gtpqos").CombinedOutput()
	if err != nil {
		t.Fatalf("build gtpqos: %v\n%s", err, out)
	}
	return bin
}

// verifyIn runs 'gtpqos verify' in the lab's upf namespace and returns its
// stdout lines and exit code.
func verifyIn(t *testing.T, l *lab.Lab, bin string) ([]string, int) {
	t.Helper()
	upfNS := l.Namespaces()[2]
	cmd := exec.Command("ip", "netns", "exec", upfNS, bin, "verify", "--dev", lab.N3Dev, "--interval", "1s")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("gtpqos verify (exit %d):\n%s%s", code, stdout.String(), stderr.String())
	return strings.Split(strings.TrimSpace(stdout.String()), "\n"), code
}

// 'gtpqos verify' flags a flow whose class does not count while its GTP-U
// packets miss the map (a wrong TEID in the QoS view), and passes once the
// classifier is fixed, all while traffic runs and without sending any.
func TestVerifyFlagsMisclassifiedFlow(t *testing.T) {
	testenv.SkipShort(t)
	testenv.RequireRoot(t)
	bin := gtpqosBinary(t)
	l := newLab(t, lab.SeedPDRs())
	seed := map[string]contract{"A": {15e6, 18e6}, "B": {5e6, 6e6}, "C": {0, 30e6}}
	good := flowsFor(l, seed)
	bad := append([]shaper.Flow(nil), good...)
	for i := range bad {
		if bad[i].Name == "B" {
			bad[i].TEID = 999 // the QoS view got B's TEID wrong
		}
	}
	s := shape(t, l, bad, false)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := l.Run(ctx, lab.TrafficSpec{Duration: 6 * time.Second})
		done <- err
	}()
	time.Sleep(1500 * time.Millisecond)

	lines, code := verifyIn(t, l, bin)
	var bClass plan.Class
	for _, c := range s.tree.FlowClasses() {
		if c.Name == "B" {
			bClass = c
		}
	}
	wantB := "class " + s.tree.Handle(bClass.Minor) + " (teid=999 qfi=3) counted no packets"
	if code != 1 || !containsLine(lines, wantB) || !containsLine(lines, "matched no gtpu classifier entry") {
		t.Errorf("broken classifier: exit %d, lines %q; want exit 1 with %q and a miss line", code, lines, wantB)
	}

	pol := plan.DefaultPolicy(uint64(linkRate * l.Scale()))
	pol.Classifier = s.tree.Classifier
	fixed, probs := plan.Plan(good, pol, s.tree)
	if fixed == nil {
		t.Fatalf("plan: %v", probs)
	}
	if _, err := s.rec.Reconcile(context.Background(), fixed); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	lines, code = verifyIn(t, l, bin)
	if code != 0 || !containsLine(lines, "3 flow classes, 3 counting") {
		t.Errorf("fixed classifier: exit %d, lines %q; want exit 0 and 3 of 3 flow classes counting", code, lines)
	}
	cancel()
	<-done
}

func containsLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}
