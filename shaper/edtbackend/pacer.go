package edtbackend

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// pins returns the device's pin directory, computed in the device's
// network namespace (pin directories are per namespace).
func (b *Backend) pins() (classify.Pins, error) {
	return PinsIn(b.opt.NetNS, b.dev)
}

// PinsIn returns dev's pin directory in network namespace ns
// (netns.None(): the current one).
func PinsIn(ns netns.NsHandle, dev string) (classify.Pins, error) {
	if !ns.IsOpen() {
		return classify.DevicePins(dev)
	}
	type res struct {
		p   classify.Pins
		err error
	}
	done := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			done <- res{err: fmt.Errorf("BPF pins: current network namespace: %w", err)}
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			done <- res{err: fmt.Errorf("BPF pins: enter the device's network namespace: %w", err)}
			return
		}
		p, err := classify.DevicePins(dev)
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread() // else the thread dies with the goroutine
		}
		done <- res{p, err}
	}()
	r := <-done
	return r.p, r.err
}

// adopt opens the pinned program and maps, if any (nil, nil: none, or
// pins the device does not run: stale.go).
func (b *Backend) adopt() (*edt.Pacer, error) {
	if b.pacer != nil {
		return b.pacer, nil
	}
	pins, err := b.pins()
	if err != nil {
		return nil, err
	}
	if live, err := pinsRun(b.h, b.dev, pins); err != nil || !live {
		return nil, err
	}
	p, ok, err := edt.OpenPinned(pins)
	if err != nil || !ok {
		return nil, err
	}
	b.pacer = p
	return p, nil
}

// pacerFor returns a program for p on a device with link layer l3 (none in
// front of IPv4): the one held or pinned, or a new one (whose maps start
// empty) when there is none, it was loaded for another overhead or link
// layer or by a gtpqos whose program differs from this one's (it finds
// flows by mark only, gives no idle credit, or does other arithmetic:
// edt.Pacer.OwnCode), or its maps have less room than p's
// policy asks for (maps are sized at load). fresh
// says it is new. A plan that does not fit the program's maps is refused
// before anything is written.
func (b *Backend) pacerFor(p *Plan, l3 bool) (pc *edt.Pacer, fresh bool, err error) {
	if pc, err = b.adopt(); err != nil {
		return nil, false, err
	}
	if pc == nil || !reusable(pc.Options(), pc.Current() && pc.OwnCode(), p, l3) {
		n := max(p.Room, b.opt.Sessions)
		o := edt.LoadOptions{Sessions: n, Flows: 2 * n, Marks: 2 * n, Keys: 2 * n, Rules: n, Overhead: p.Overhead, L3: l3,
			Burst: edt.DefaultBurst, FlowAhead: edt.DefaultFlowAhead}
		if pc, err = edt.Load(o); err != nil {
			return nil, false, fmt.Errorf("dev %s: %w", b.dev, err)
		}
		fresh = true
	}
	if err := fits(p, pc.Options()); err != nil {
		if fresh {
			_ = pc.Close()
		}
		return nil, false, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	return pc, fresh, nil
}

// reusable says whether a program loaded with o (current: it finds flows
// by (TEID, QFI) and SDF rules too and runs this gtpqos's instructions)
// can pace p on a device with link layer l3.
func reusable(o edt.LoadOptions, current bool, p *Plan, l3 bool) bool {
	return current && o.Overhead == p.Overhead && o.L3 == l3 && o.Sessions >= p.Room &&
		o.Burst == edt.DefaultBurst && o.FlowAhead == edt.DefaultFlowAhead
}

// fits says whether p's sessions, flows, marks, (TEID, QFI) keys and TEIDs with SDF rules fit in maps of o's
// sizes, naming the first that does not and the knob that sizes them.
func fits(p *Plan, o edt.LoadOptions) error {
	marks, keys := 0, 0
	for _, f := range p.Flows {
		marks, keys = marks+len(f.Spec.Marks), keys+len(f.Spec.Keys)
	}
	if err := fitCounts(len(p.Sessions), len(p.Flows), marks, keys, o); err != nil {
		return err
	}
	return fitOne("rules", len(p.Rules), o.Rules, o)
}

// fitCounts is fits for sessions, flows, marks and keys counted.
func fitCounts(sessions, flows, marks, keys int, o edt.LoadOptions) error {
	for _, m := range []struct {
		name       string
		need, room int
	}{{"sessions", sessions, o.Sessions}, {"flows", flows, o.Flows}, {"marks", marks, o.Marks}, {"teids", keys, o.Keys}} {
		if err := fitOne(m.name, m.need, m.room, o); err != nil {
			return err
		}
	}
	return nil
}

func fitOne(name string, need, room int, o edt.LoadOptions) error {
	if need > room {
		return fmt.Errorf("edt: %d %s do not fit in the program's %s map (room for %d, sized for %d sessions): give the policy `edt: {sessions: N}` with room for them", need, name, name, room, o.Sessions)
	}
	return nil
}

// install makes p the held program (closing the one it replaces) and pins
// it.
func (b *Backend) install(p *edt.Pacer) error {
	if b.pacer != p {
		if b.pacer != nil {
			_ = b.pacer.Close()
		}
		b.pacer = p
	}
	pins, err := b.pins()
	if err != nil {
		return err
	}
	if err := p.Pin(pins); err != nil {
		return fmt.Errorf("dev %s: %w", b.dev, err)
	}
	return nil
}
