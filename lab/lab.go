package lab

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Config describes a lab.
type Config struct {
	// PDRs is the UPF stand-in's flow table (default: SeedPDRs).
	PDRs []PDR
	// NoMarks sends every flow with mark 0, as stock gtp5g does; a
	// classifier must then recognise flows by TEID and QFI.
	NoMarks bool
	// RateScale multiplies offered rates (0 = read GTPQOS_LAB_RATE_SCALE).
	RateScale float64
	// N3QueueLen, when set, is the N3 device's txqueuelen (default 1000):
	// the packet limit of HTB's direct queue and of its built-in pfifo,
	// which only a leaf without a budget-sized FIFO uses (a spare class).
	N3QueueLen int
}

// Lab is a running lab: namespaces, links, UPF and gNB stand-ins.
type Lab struct {
	pdrs  []PDR
	scale float64
	topo  *topology
	upf   *upf
	gnb   *gnb
	wg    sync.WaitGroup
	mu    sync.Mutex
	errs  []error

	closeOnce sync.Once
	closeErr  error
}

// New builds a lab. The caller must Close it (also on failure paths and on
// signals): Close removes every namespace, link and goroutine it made.
func New(cfg Config) (*Lab, error) {
	pdrs := cfg.PDRs
	if pdrs == nil {
		pdrs = SeedPDRs()
	}
	if err := ValidatePDRs(pdrs); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	scale := cfg.RateScale
	if scale == 0 {
		var err error
		if scale, err = RateScale(); err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
	}
	topo, err := buildTopology(pdrs)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if cfg.N3QueueLen > 0 {
		l, err := topo.upf.nl.LinkByName(N3Dev)
		if err == nil {
			err = topo.upf.nl.LinkSetTxQLen(l, cfg.N3QueueLen)
		}
		if err != nil {
			topo.close()
			return nil, fmt.Errorf("lab: txqueuelen of %s: %w", N3Dev, err)
		}
	}
	l := &Lab{pdrs: slices.Clone(pdrs), scale: scale, topo: topo}
	if l.upf, err = newUPF(topo.upf, topo.upfTun, l.pdrs, !cfg.NoMarks); err != nil {
		topo.close()
		return nil, fmt.Errorf("lab: %w", err)
	}
	if l.gnb, err = newGNB(topo.gnb, topo.gnbTun, l.pdrs); err != nil {
		l.upf.close()
		topo.close()
		return nil, fmt.Errorf("lab: %w", err)
	}
	l.goRun(l.upf.run)
	l.goRun(l.gnb.run)
	return l, nil
}

func (l *Lab) goRun(fn func() error) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if err := fn(); err != nil {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		}
	}()
}

// Err returns the datapath's failures so far (nil while healthy).
func (l *Lab) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.errs...)
}

// PDRs returns the lab's flow table.
func (l *Lab) PDRs() []PDR { return slices.Clone(l.pdrs) }

// Scale returns the rate scale the lab applies to offered load.
func (l *Lab) Scale() float64 { return l.scale }

// UPFNetlink returns a netlink handle inside the upf namespace (owned by
// the lab; do not close it): give it to the shaper with N3Dev.
func (l *Lab) UPFNetlink() *netlink.Handle { return l.topo.upf.nl }

// UPFNetNS returns the upf namespace (owned by the lab).
func (l *Lab) UPFNetNS() netns.NsHandle { return l.topo.upf.handle }

// Namespaces returns the names of the lab's namespaces (ue, gnb, upf, dn).
func (l *Lab) Namespaces() []string { n := nsNames(l.topo.suffix); return n[:] }

// UPFCounters returns the UPF stand-in's per-flow counters, in PDR order.
func (l *Lab) UPFCounters() []FlowCounters { return l.upf.snapshot() }

// Unmatched returns how many N6 packets matched no PDR.
func (l *Lab) Unmatched() uint64 { return l.upf.unmatched.Load() }

// Delivered returns how many G-PDUs the gNB decapsulated and delivered, and
// how many it rejected.
func (l *Lab) Delivered() (ok, bad uint64) { return l.gnb.delivered.Load(), l.gnb.bad.Load() }

// Close stops the datapath and removes the namespaces. It is safe to call
// more than once.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		l.upf.close()
		l.gnb.close()
		l.topo.upfTun.Close()
		l.topo.gnbTun.Close()
		l.wg.Wait()
		l.closeErr = l.topo.close()
	})
	return l.closeErr
}

// Diagnostics are the lab's drop counters outside HTB, cumulative since
// the lab started: where a lab measurement can lose packets besides the
// bottleneck being measured.
type Diagnostics struct {
	// TunDropped counts DN->UE packets the N6 TUN dropped because the UPF
	// stand-in did not read them in time.
	TunDropped uint64
	// UPFSendDropped counts G-PDUs the N3 socket refused (buffer full).
	UPFSendDropped uint64
	// Unmatched counts N6 packets that matched no PDR.
	Unmatched uint64
	// GNBRejected counts N3 packets the gNB could not decapsulate/deliver.
	GNBRejected uint64
}

// Diagnostics reads the drop counters.
func (l *Lab) Diagnostics() Diagnostics {
	d := Diagnostics{Unmatched: l.upf.unmatched.Load(), GNBRejected: l.gnb.bad.Load()}
	for _, c := range l.upf.snapshot() {
		d.UPFSendDropped += c.Dropped
	}
	if link, err := l.topo.upf.nl.LinkByName(upfTunDev); err == nil && link.Attrs().Statistics != nil {
		d.TunDropped = link.Attrs().Statistics.TxDropped
	}
	return d
}
