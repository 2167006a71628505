package ab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/vishvananda/netlink"
)

// DeviceTarget runs arms on a real UPF's device in the current network
// namespace. It has no receivers: the operator drives the traffic, and the
// flows' rates come from class counters.
type DeviceTarget struct {
	h       *netlink.Handle
	dev     string
	rec     *htb.Reconciler
	prev    *htb.Tree
	hadTree bool
	lastArm string
	Note    string
}

// NewDeviceTarget opens a netlink handle and a reconciler on dev.
func NewDeviceTarget(ctx context.Context, dev string, opts ...htb.Option) (*DeviceTarget, error) {
	if _, err := netlink.LinkByName(dev); err != nil {
		return nil, fmt.Errorf("device %s: %w", dev, err)
	}
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("netlink handle: %w", err)
	}
	t := &DeviceTarget{h: h, dev: dev, rec: htb.NewReconciler(h, dev, opts...)}
	before, err := t.rec.Actual(ctx)
	if err != nil && !errors.Is(err, shaper.ErrNotOwned) {
		h.Close()
		return nil, fmt.Errorf("device %s: read tree: %w", dev, err)
	}
	t.hadTree = before != nil
	return t, nil
}

// Describe names the device.
func (t *DeviceTarget) Describe() string { return "device " + t.dev + " (class counters only)" }

// Scale is 1 on a device.
func (t *DeviceTarget) Scale() float64 { return 1 }

// Apply plans and reconciles the arm on the device.
func (t *DeviceTarget) Apply(ctx context.Context, arm Arm) (*htb.Tree, string, error) {
	t.lastArm = arm.Name
	return applyPlan(ctx, t.rec, &t.prev, arm, 1)
}

// ClassStats reads the device's class counters.
func (t *DeviceTarget) ClassStats(ctx context.Context) (map[uint32]htb.ClassStats, error) {
	return t.rec.ClassStats(ctx)
}

// Traffic waits for the run to end: traffic comes from elsewhere.
func (t *DeviceTarget) Traffic(ctx context.Context, _ []shaper.Flow, start time.Time, d time.Duration) (map[string]FlowTraffic, error) {
	return nil, sleepUntil(ctx, start.Add(d))
}

// Close removes the experiment's tree if the device had none before;
// otherwise it leaves the last arm's tree and says so in Note (a running
// 'gtpqos watch' puts its own tree back on its next resync).
func (t *DeviceTarget) Close(ctx context.Context) error {
	defer t.h.Close()
	if t.hadTree {
		t.Note = fmt.Sprintf("device %s had a gtpqos tree before the experiment; it now holds arm %s's tree", t.dev, t.lastArm)
		return nil
	}
	return t.rec.Reset(ctx)
}
