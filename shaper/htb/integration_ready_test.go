package htb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// notReady is a classifier of the Reconciler's own (as the GTP-U one is)
// that says this process could not install it.
type notReady struct{ classify.Classifier }

func (notReady) Ready(string) error { return errors.New("missing CAP_BPF") }

// A custom classifier's readiness used to go unasked: with CAP_BPF
// missing, the stock daemon built the root and classes, then failed to
// load the GTP-U programs. The check now comes first: the run fails in
// one line naming what is missing and the device stays empty.
func TestIntegrationCustomClassifierReadyBeforeWriting(t *testing.T) {
	l := newLab(t)
	before := l.dump(t)
	rec := l.rec(Options{Custom: notReady{classify.NewMarkBPF()}, Leaf: plan.LeafFIFO})
	_, err := rec.Reconcile(context.Background(), mustPlan(t, scaleFlows(1, 3), scalePolicy(), nil))
	if err == nil || !strings.Contains(err.Error(), "missing CAP_BPF") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("reconcile: %v; want one line naming CAP_BPF", err)
	}
	if after := l.dump(t); after != before {
		t.Errorf("the device changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
