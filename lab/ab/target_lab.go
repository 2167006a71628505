package ab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/free5gc/gtpqos/lab"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
)

// LabTarget runs arms in a lab: the shaper reconciles the UPF's N3 veth,
// the lab's senders and receivers make and measure the traffic.
type LabTarget struct {
	lab       *lab.Lab
	be        *switcher
	shared    *backends.Shared
	tcp       bool
	payload   int
	generator string
	notes     []string
}

// RunNotes returns the last run's datapath remarks (drops outside HTB).
func (t *LabTarget) RunNotes() []string { return t.notes }

// LabOptions configure a LabTarget.
type LabOptions struct {
	// TCP sends TCP instead of UDP; Payload is the UDP payload size;
	// Generator the traffic generator (lab.TrafficBuiltin, iperf3).
	TCP       bool
	Payload   int
	Generator string
	// Backend overrides the arms' classifier or leaf kind.
	Backend backends.Options
	// NoMarks classifies by (TEID, QFI) with the GTP-U classifier, as on
	// stock gtp5g (the lab then sends every flow with mark 0).
	NoMarks bool
}

// NewLabTarget returns a target on l's N3 device.
func NewLabTarget(l *lab.Lab, o LabOptions) (*LabTarget, error) {
	t := &LabTarget{lab: l, tcp: o.TCP, payload: o.Payload, generator: o.Generator}
	bo := o.Backend
	bo.NetNS, bo.Direction = l.UPFNetNS(), shaper.Downlink
	if o.NoMarks {
		t.shared = backends.NewShared(lab.N3Dev)
		bo.Marks, bo.Shared = backends.Unmarked, t.shared
	}
	be, err := newSwitcher(lab.N3Dev, bo)
	if err != nil {
		return nil, err
	}
	t.be = be
	return t, nil
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

// applyArm applies the arm, its rates scaled, with the backend; a plan
// with an error problem writes nothing.
func applyArm(ctx context.Context, be shaper.Backend, arm Arm, scale float64) (shaper.Report, error) {
	flows, pol := ScaleArm(arm, scale)
	rep, err := be.Apply(ctx, flows, pol, shaper.ApplyOptions{Strict: true})
	if err != nil {
		return rep, fmt.Errorf("arm %s (%s): %w", arm.Name, arm.Source, err)
	}
	return rep, nil
}

// Apply enforces the arm on the lab's N3 device.
func (t *LabTarget) Apply(ctx context.Context, arm Arm) (shaper.Report, error) {
	if err := CheckLabFlows(t.lab.PDRs(), arm); err != nil {
		return shaper.Report{}, err
	}
	if t.shared != nil {
		arm = withLabTEIDs(arm, t.lab.PDRs())
	}
	be, err := t.be.use(ctx, arm.Policy.Backend)
	if err != nil {
		return shaper.Report{}, err
	}
	return applyArm(ctx, be, arm, t.lab.Scale())
}

// withLabTEIDs gives the arm's flows without a TEID their lab PDR's TEID
// (for the (TEID, QFI) classifier).
func withLabTEIDs(arm Arm, pdrs []lab.PDR) Arm {
	teid := map[string]uint32{}
	for _, p := range pdrs {
		teid[p.Name] = p.TEID
	}
	arm.Flows = append([]shaper.Flow(nil), arm.Flows...)
	for i := range arm.Flows {
		if f := &arm.Flows[i]; f.TEID == 0 {
			f.TEID = teid[f.Name]
		}
	}
	return arm
}

// Counters reads the N3 device's class counters.
func (t *LabTarget) Counters(ctx context.Context) (map[string]shaper.Counters, error) {
	return t.be.counters(ctx)
}

// Reset removes the tree from the lab's N3 device, and with it every packet
// its leaves still hold; the next Apply builds it again.
func (t *LabTarget) Reset(ctx context.Context) error {
	return t.be.reset(ctx)
}

// SetPayload sets the UDP payload size of the next runs.
func (t *LabTarget) SetPayload(n int) { t.payload = n }

// perFlow converts the arm's offered rates (bit/s of the user's IP
// packets, before the rate scale) to the lab's: bit/s of UDP payload,
// scaled; nil when the arm sets none.
func (t *LabTarget) perFlow(arm Arm) map[string]float64 {
	if arm.Offered == nil {
		return nil
	}
	p := float64(t.payload)
	if p == 0 {
		p = lab.DefaultPayload
	}
	out := make(map[string]float64, len(arm.Offered))
	for name, ip := range arm.Offered {
		out[name] = ip * t.lab.Scale() * p / (p + InnerUDPOverhead)
	}
	return out
}

// Traffic runs the lab's traffic and maps it to flow names.
func (t *LabTarget) Traffic(ctx context.Context, arm Arm, start time.Time, d time.Duration) (map[string]FlowTraffic, error) {
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
	res, err := t.lab.Run(ctx, lab.TrafficSpec{Duration: d, TCP: t.tcp, Payload: t.payload, Generator: t.generator, Start: start,
		PerFlow: t.perFlow(arm)})
	if err != nil {
		return nil, err
	}
	if err := t.lab.Err(); err != nil {
		return nil, fmt.Errorf("lab datapath: %w", err)
	}
	out := map[string]FlowTraffic{}
	for _, f := range res {
		ft := FlowTraffic{Retransmits: f.Retransmits, DelayMs: f.DelayMs}
		for _, iv := range f.Intervals {
			ft.Mbps = append(ft.Mbps, iv.Mbps)
			ft.Lost = append(ft.Lost, iv.Lost)
			ft.Reordered = append(ft.Reordered, iv.Reordered)
		}
		out[f.Name] = ft
	}
	return out, nil
}

// Close removes the tree and the GTP-U classifier (the lab's namespaces go
// with the lab).
func (t *LabTarget) Close(ctx context.Context) error {
	err := t.be.reset(ctx)
	err = errors.Join(err, t.shared.Close(t.lab.UPFNetlink()))
	return errors.Join(err, t.be.close())
}

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
