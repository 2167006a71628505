package ab

import (
	"context"
	"fmt"
	"time"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// LabTarget runs arms in a lab: the shaper reconciles the UPF's N3 veth,
// the lab's senders and receivers make and measure the traffic.
type LabTarget struct {
	lab       *lab.Lab
	rec       *htb.Reconciler
	prev      *htb.Tree
	tcp       bool
	payload   int
	generator string
	notes     []string
}

// RunNotes returns the last run's datapath remarks (drops outside HTB).
func (t *LabTarget) RunNotes() []string { return t.notes }

// NewLabTarget returns a target on l's N3 device. opts go to the shaper's
// reconciler (classifier, leaf).
func NewLabTarget(l *lab.Lab, tcp bool, payload int, generator string, opts ...htb.Option) *LabTarget {
	return &LabTarget{lab: l, rec: htb.NewReconciler(l.UPFNetlink(), lab.N3Dev, opts...),
		tcp: tcp, payload: payload, generator: generator}
}

// Describe names the lab's upf namespace and device.
func (t *LabTarget) Describe() string {
	return fmt.Sprintf("lab (netns %s, dev %s, user-space UPF/gNB)", t.lab.Namespaces()[2], lab.N3Dev)
}

// Scale is the lab's rate scale.
func (t *LabTarget) Scale() float64 { return t.lab.Scale() }

// ScaleArm returns the arm's flows and policy with every rate multiplied
// by s (contracts, link, static rate/ceil, non-GBR minimum, default rate).
func ScaleArm(arm Arm, s float64) ([]shaper.Flow, shaper.Policy) {
	sc := func(v uint64) uint64 { return uint64(float64(v)*s + 0.5) }
	flows := make([]shaper.Flow, len(arm.Flows))
	for i, f := range arm.Flows {
		f.GBR, f.MBR, f.SessionAMBR = sc(f.GBR), sc(f.MBR), sc(f.SessionAMBR)
		flows[i] = f
	}
	p := arm.Policy
	p.LinkRate, p.StaticRate, p.StaticCeil = sc(p.LinkRate), sc(p.StaticRate), sc(p.StaticCeil)
	p.NonGBRMin, p.DefaultRate = sc(p.NonGBRMin), sc(p.DefaultRate)
	return flows, p
}

// applyPlan plans the arm (scaled) and reconciles it.
func applyPlan(ctx context.Context, rec *htb.Reconciler, prev **htb.Tree, arm Arm, scale float64) (*htb.Tree, string, error) {
	flows, pol := ScaleArm(arm, scale)
	tree, problems := htb.Plan(flows, pol, *prev)
	if p, bad := shaper.FirstError(problems); bad {
		return nil, "", fmt.Errorf("plan %s: %w", arm.Source, p)
	}
	res, err := rec.Reconcile(ctx, tree)
	if err != nil {
		return nil, "", err
	}
	*prev = tree
	return tree, res.Summary(), nil
}

// Apply plans and reconciles the arm on the lab's N3 device.
func (t *LabTarget) Apply(ctx context.Context, arm Arm) (*htb.Tree, string, error) {
	if err := CheckLabFlows(t.lab.PDRs(), arm); err != nil {
		return nil, "", err
	}
	return applyPlan(ctx, t.rec, &t.prev, arm, t.lab.Scale())
}

// ClassStats reads the N3 device's class counters.
func (t *LabTarget) ClassStats(ctx context.Context) (map[uint32]htb.ClassStats, error) {
	return t.rec.ClassStats(ctx)
}

// Traffic runs the lab's traffic and maps it to flow names.
func (t *LabTarget) Traffic(ctx context.Context, _ []shaper.Flow, start time.Time, d time.Duration) (map[string]FlowTraffic, error) {
	before := t.lab.Diagnostics()
	defer func() {
		a := t.lab.Diagnostics()
		t.notes = nil
		if d := a.TunDropped - before.TunDropped; d > 0 {
			t.notes = append(t.notes, fmt.Sprintf("N6 TUN dropped %d packets (UPF stand-in too slow)", d))
		}
		if d := a.UPFSendDropped - before.UPFSendDropped; d > 0 {
			t.notes = append(t.notes, fmt.Sprintf("UPF N3 socket refused %d packets", d))
		}
		if d := a.Unmatched - before.Unmatched; d > 0 {
			t.notes = append(t.notes, fmt.Sprintf("%d N6 packets matched no PDR", d))
		}
		if d := a.GNBRejected - before.GNBRejected; d > 0 {
			t.notes = append(t.notes, fmt.Sprintf("gNB rejected %d packets", d))
		}
	}()
	res, err := t.lab.Run(ctx, lab.TrafficSpec{Duration: d, TCP: t.tcp, Payload: t.payload, Generator: t.generator, Start: start})
	if err != nil {
		return nil, err
	}
	if err := t.lab.Err(); err != nil {
		return nil, fmt.Errorf("lab datapath: %w", err)
	}
	out := map[string]FlowTraffic{}
	for _, f := range res {
		ft := FlowTraffic{Retransmits: f.Retransmits}
		for _, iv := range f.Intervals {
			ft.Mbps = append(ft.Mbps, iv.Mbps)
			ft.Lost = append(ft.Lost, iv.Lost)
		}
		out[f.Name] = ft
	}
	return out, nil
}

// Close removes the tree (the lab's namespaces go with the lab).
func (t *LabTarget) Close(ctx context.Context) error { return t.rec.Reset(ctx) }

// CheckLabFlows checks that every flow of the arm has a lab PDR with the
// same name, and that the PDR carries the flow's identity: SEID, QFI, TEID
// and mark (when both set).
func CheckLabFlows(pdrs []lab.PDR, arm Arm) error {
	byName := map[string]lab.PDR{}
	for _, p := range pdrs {
		byName[p.Name] = p
	}
	for _, f := range arm.Flows {
		p, ok := byName[f.Name]
		if !ok {
			return fmt.Errorf("arm %s (%s): flow %q has no lab PDR (lab flows: %v)", arm.Name, arm.Source, f.Name, pdrNames(pdrs))
		}
		bad := func(field string, a, b any) error {
			return fmt.Errorf("arm %s (%s): %s: %s %v, but the lab's PDR %s has %v", arm.Name, arm.Source, f.Label(), field, a, p.Name, b)
		}
		switch {
		case f.ID.SEID != p.SEID:
			return bad("seid", f.ID.SEID, p.SEID)
		case f.QFI != p.QFI:
			return bad("qfi", f.QFI, p.QFI)
		case f.TEID != 0 && f.TEID != p.TEID:
			return bad("teid", f.TEID, p.TEID)
		case f.Mark != 0 && f.Mark != p.Mark:
			return bad("mark", fmt.Sprintf("%#x", f.Mark), fmt.Sprintf("%#x", p.Mark))
		case f.Direction != shaper.Downlink:
			return fmt.Errorf("arm %s (%s): %s is %s; the lab shapes downlink only", arm.Name, arm.Source, f.Label(), f.Direction)
		}
	}
	return nil
}

func pdrNames(pdrs []lab.PDR) []string {
	var n []string
	for _, p := range pdrs {
		n = append(n, p.Name)
	}
	return n
}
