package ab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
)

// DeviceTarget runs arms on a real UPF's device in the current network
// namespace. It has no receivers: the operator drives the traffic, and the
// flows' rates come from class counters.
type DeviceTarget struct {
	be      *switcher
	dev     string
	hadTree bool
	lastArm string
	Note    string
}

// NewDeviceTarget opens the device's backend (o overrides the arms'
// classifier or leaf) and remembers whether it held a gtpqos tree.
func NewDeviceTarget(ctx context.Context, dev string, o backends.Options) (*DeviceTarget, error) {
	be, err := newSwitcher(dev, o)
	if err != nil {
		return nil, err
	}
	in, err := be.be.Inspect(ctx)
	if err != nil && !errors.Is(err, shaper.ErrNotOwned) {
		be.close()
		return nil, fmt.Errorf("device %s: read tree: %w", dev, err)
	}
	return &DeviceTarget{be: be, dev: dev, hadTree: in != nil && in.Owned}, nil
}

// Describe names the device.
func (t *DeviceTarget) Describe() string { return "device " + t.dev + " (class counters only)" }

// Scale is 1 on a device.
func (t *DeviceTarget) Scale() float64 { return 1 }

// Apply enforces the arm on the device.
func (t *DeviceTarget) Apply(ctx context.Context, arm Arm) (shaper.Report, error) {
	t.lastArm = arm.Name
	be, err := t.be.use(ctx, arm.Policy.Backend)
	if err != nil {
		return shaper.Report{}, err
	}
	return applyArm(ctx, be, arm, 1)
}

// Counters reads the device's class counters.
func (t *DeviceTarget) Counters(ctx context.Context) (map[string]shaper.Counters, error) {
	return t.be.counters(ctx)
}

// Traffic waits for the run to end: traffic comes from elsewhere.
func (t *DeviceTarget) Traffic(ctx context.Context, _ Arm, start time.Time, d time.Duration) (map[string]FlowTraffic, error) {
	return nil, sleepUntil(ctx, start.Add(d))
}

// Close removes the experiment's tree if the device had none before;
// otherwise it leaves the last arm's tree and says so in Note. Closing the
// backend releases the device's lock, if it was opened as a writer.
func (t *DeviceTarget) Close(ctx context.Context) error {
	defer t.be.close()
	if t.hadTree {
		t.Note = fmt.Sprintf("device %s had a gtpqos tree before the experiment; it now holds arm %s's tree", t.dev, t.lastArm)
		return nil
	}
	return t.be.reset(ctx)
}
