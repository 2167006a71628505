package htb

import (
	"context"
	"fmt"
	"sync"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/internal/probens"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// kernelFeatures says which of the optional kernel parts the backend uses
// this kernel has. They are probed once per process, in a network
// namespace of the probe's own that no one else sees and that vanishes
// with the probe, so finding out never writes to the device being shaped
// (adding a test filter or qdisc there would be a change of its tree,
// made before the run knows it may write at all).
type kernelFeatures struct {
	// known is false when the probe could not run (creating a network
	// namespace needs CAP_SYS_ADMIN); why says what failed. Callers then
	// fall back to learning on the device, as writes fail.
	known bool
	why   string
	// fw, fqCodel and bpf are nil when cls_fw, the fq_codel qdisc and a
	// cls_bpf program load work, else the kernel's answer.
	fw, fqCodel, bpf error
}

var (
	featuresOnce sync.Once
	features     kernelFeatures
)

// probedFeatures returns the kernel's features, probing on first use.
func probedFeatures() kernelFeatures {
	featuresOnce.Do(func() {
		var f kernelFeatures
		err := probens.Run(func(h *netlink.Handle, lo netlink.Link) error {
			f = probeOn(h, lo)
			return nil
		})
		if err != nil {
			f = kernelFeatures{why: err.Error()}
		}
		features = f
	})
	return features
}

// probeOn tries an HTB root on the probe namespace's loopback, a fw filter
// under it and an fq_codel leaf, then loads the mark classifier's BPF
// program.
func probeOn(h *netlink.Handle, lo netlink.Link) kernelFeatures {
	root := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT})
	if err := h.QdiscAdd(root); err != nil {
		return kernelFeatures{why: fmt.Sprintf("HTB root in the probe's namespace: %v", err)}
	}
	f := kernelFeatures{known: true}
	env := classify.Env{Handle: h, Link: lo, Root: root.Handle}
	f.fw = classify.NewFw().Probe(context.Background(), env)
	cls := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: lo.Attrs().Index, Handle: netlink.MakeHandle(1, 1), Parent: root.Handle},
		netlink.HtbClassAttrs{Rate: 1_000_000})
	if f.fqCodel = h.ClassAdd(cls); f.fqCodel == nil {
		f.fqCodel = h.QdiscAdd(netlink.NewFqCodel(netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Parent: cls.Handle,
			Handle: netlink.MakeHandle(0x10, 0)}))
	}
	f.bpf = classify.NewMarkBPF().Probe(context.Background(), env)
	return f
}

// requestedKind is the classifier kind a run for desired is asked for
// ("" when a custom classifier is given, whose kind needs no probe here).
func (r *Reconciler) requestedKind(desired classify.Kind) classify.Kind {
	if r.opts.Custom != nil {
		return ""
	}
	if r.opts.Classifier != "" && r.opts.Classifier != classify.KindAuto {
		return r.opts.Classifier
	}
	if desired == "" {
		return classify.KindAuto
	}
	return desired
}

// requestedLeaf is the leaf kind a run for desired is asked for.
func (r *Reconciler) requestedLeaf(desired plan.LeafKind) plan.LeafKind {
	if r.opts.Leaf != "" && r.opts.Leaf != plan.LeafAuto {
		return r.opts.Leaf
	}
	return desired
}

// checkKernel fails, before anything is written, when the kernel lacks the
// classifier or leaf qdisc asked for explicitly, naming the missing
// feature. auto needs no check: it picks what the kernel has (it fails
// only when neither classifier it can pick works).
func (r *Reconciler) checkKernel(kind classify.Kind, leaf plan.LeafKind) error {
	if kind == "" && leaf != plan.LeafFQCodel {
		return nil
	}
	f := probedFeatures()
	if !f.known {
		return nil
	}
	switch {
	case kind == classify.KindFw && f.fw != nil:
		return fmt.Errorf("dev %s: classifier fw: this kernel has no cls_fw (a fw filter was refused: %v); use classifier bpf or auto", r.dev, f.fw)
	case kind == classify.KindBPF && f.bpf != nil:
		return fmt.Errorf("dev %s: classifier bpf: the kernel refused the cls_bpf program (%v); use classifier fw or auto", r.dev, f.bpf)
	case kind == classify.KindAuto && f.fw != nil && f.bpf != nil:
		return fmt.Errorf("dev %s: classifier auto: this kernel has neither cls_fw (%v) nor a usable cls_bpf (%v)", r.dev, f.fw, f.bpf)
	case leaf == plan.LeafFQCodel && f.fqCodel != nil:
		return fmt.Errorf("dev %s: leaf fq_codel: this kernel has no fq_codel qdisc (one was refused: %v); use leaf fifo or auto", r.dev, f.fqCodel)
	}
	return nil
}

// Precheck implements shaper.Prechecker: it fails, before anything is
// written, when the kernel lacks the classifier or leaf qdisc that pol
// (with the backend's overrides) asks for explicitly.
func (b *Backend) Precheck(ctx context.Context, pol shaper.Policy) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := plan.PolicyOf(pol)
	if err != nil {
		return fmt.Errorf("dev %s: %w", b.dev, err)
	}
	p = b.policy(p)
	kind := b.rec.requestedKind(p.Classifier)
	if err := b.rec.checkKernel(kind, b.rec.requestedLeaf(p.Leaf.Kind)); err != nil {
		return err
	}
	if kind == classify.KindAuto {
		return nil
	}
	return b.rec.checkReady(kind)
}
