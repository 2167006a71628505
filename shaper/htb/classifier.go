package htb

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// builtin returns the shaper's own classifier of a kind, cached.
func (r *Reconciler) builtin(k classify.Kind) classify.Classifier {
	if c, ok := r.classCache[k]; ok {
		return c
	}
	var c classify.Classifier
	switch k {
	case classify.KindFw:
		c = classify.NewFw()
	case classify.KindBPF:
		c = classify.NewMarkBPF()
	default:
		return nil
	}
	r.classCache[k] = c
	return c
}

// checkKind fails if the classifier the run would use is neither given as
// Options.Custom, nor auto, nor built in. It reads nothing from the kernel,
// so reconcile calls it before changing anything.
func (r *Reconciler) checkKind(desired *plan.Tree) error {
	if r.opts.Custom != nil {
		return nil
	}
	k := r.opts.Classifier
	if k == "" || k == classify.KindAuto {
		k = desired.Classifier
	}
	if k == "" || k == classify.KindAuto || k == classify.KindFw || k == classify.KindBPF {
		return nil
	}
	return fmt.Errorf("dev %s: unknown classifier %q (want auto, fw or bpf; others must be passed as Options.Custom)", r.dev, k)
}

// classifier picks the classifier: Options.Custom, else the
// forced or desired kind; auto adopts the built-in classifier already
// installed, else probes fw and falls back to bpf.
func (r *Reconciler) classifier(ctx context.Context, env classify.Env, desired *plan.Tree, res *Result) (classify.Classifier, error) {
	if r.opts.Custom != nil {
		res.ClassifierKind = r.opts.Custom.Kind()
		return r.opts.Custom, nil
	}
	k := r.opts.Classifier
	if k == "" || k == classify.KindAuto {
		k = desired.Classifier
	}
	if k == "" || k == classify.KindAuto {
		if r.autoKind != "" {
			k = r.autoKind
		} else {
			k = r.detect(ctx, env, res)
			r.autoKind = k
		}
	}
	c := r.builtin(k)
	if c == nil {
		return nil, fmt.Errorf("dev %s: unknown classifier %q (want auto, fw or bpf; others must be passed as Options.Custom)", r.dev, k)
	}
	res.ClassifierKind = k
	return c, nil
}

// detect adopts an installed built-in classifier, else picks fw if the
// kernel accepts a fw filter, else bpf.
func (r *Reconciler) detect(ctx context.Context, env classify.Env, res *Result) classify.Kind {
	for _, k := range []classify.Kind{classify.KindBPF, classify.KindFw} {
		if b, err := r.builtin(k).Bindings(ctx, env); err == nil && len(b) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("classifier auto: adopted the installed %s classifier", k))
			return k
		}
		if k == classify.KindBPF {
			if ok, _ := r.builtin(classify.KindBPF).(*classify.MarkBPF).Installed(env); ok {
				res.Notes = append(res.Notes, "classifier auto: adopted the installed bpf classifier")
				return k
			}
		}
	}
	// The probe of a throwaway namespace where it could run; else a test
	// filter on this device's root.
	var err error
	if f := probedFeatures(); f.known {
		err = f.fw
	} else {
		err = r.builtin(classify.KindFw).(classify.Prober).Probe(ctx, env)
	}
	if err == nil {
		res.Notes = append(res.Notes, "classifier auto: kernel has cls_fw: using fw")
		return classify.KindFw
	}
	res.Notes = append(res.Notes, fmt.Sprintf("classifier auto: no cls_fw in this kernel (%v): using bpf (cls_bpf + mark->class map)", err))
	return classify.KindBPF
}

// removeOtherClassifiers removes built-in classifiers other than the one in
// use (after a switch of classifier), only if they left anything.
func (r *Reconciler) removeOtherClassifiers(ctx context.Context, env classify.Env, in classify.Classifier, res *Result) error {
	for _, k := range []classify.Kind{classify.KindFw, classify.KindBPF} {
		if in.Kind() == k {
			continue
		}
		c := r.builtin(k)
		present := false
		if b, err := c.Bindings(ctx, env); err == nil && len(b) > 0 {
			present = true
		}
		if m, ok := c.(*classify.MarkBPF); ok {
			if inst, _ := m.Installed(env); inst {
				present = true
			}
		}
		if !present {
			continue
		}
		n, err := classify.RemoveCounted(ctx, env, c)
		r.writes += n
		if err != nil {
			return fmt.Errorf("dev %s: remove previous classifier %s: %w", r.dev, k, err)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("removed the previous %s classifier", k))
	}
	return nil
}

// checkReady fails, naming what is missing, when this process could not
// install or adopt the built-in classifier of kind k, or the Reconciler's
// own classifier (a capability, a usable BPF pin directory). It is asked
// once per Reconciler and kind.
func (r *Reconciler) checkReady(k classify.Kind) error {
	if !classify.HasCap(unix.CAP_NET_ADMIN) {
		return fmt.Errorf("dev %s: missing CAP_NET_ADMIN (needed for every tc write)", r.dev)
	}
	var c classify.Readier
	var ok bool
	switch {
	case r.opts.Custom != nil: // a custom classifier (gtpu) is asked as well
		k = r.opts.Custom.Kind()
		c, ok = r.opts.Custom.(classify.Readier)
	case k != classify.KindAuto:
		c, ok = r.builtin(k).(classify.Readier)
	}
	if !ok || r.ready[k] {
		return nil
	}
	if err := c.Ready(r.dev); err != nil {
		return fmt.Errorf("dev %s: classifier %s: %w", r.dev, k, err)
	}
	if r.ready == nil {
		r.ready = map[classify.Kind]bool{}
	}
	r.ready[k] = true
	return nil
}

// noRoot reports whether the device has no root qdisc at all (so that a
// root this run creates can go again if the run must stop).
func (r *Reconciler) noRoot(link netlink.Link) bool {
	st, err := r.readQdiscs(link)
	return err == nil && (st.root == nil || st.root.Attrs().Handle == 0)
}

// readyAfterPick checks the classifier auto picked; if the run created
// the root qdisc on a device that had none, the root goes again, so the
// device is left as it was.
func (r *Reconciler) readyAfterPick(u *run, hadNoRoot bool) error {
	err := r.checkReady(u.cls.Kind())
	if err == nil || !u.res.CreatedRoot || !hadNoRoot {
		return err
	}
	if c, cerr := r.tc(u.link); cerr == nil {
		_ = c.do(rootDelReq(u.link.Attrs().Index, rootHandle()))
	}
	return err
}
