package htb

import (
	"context"
	"fmt"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// writeDelta writes an incremental update (plan.State.Apply) on top of what
// the last successful run made true, reading nothing back: entries
// unbound, classes deleted children first, classes created parents first
// (with their leaf qdiscs) and changed, entries bound. It needs incremental
// mode, a remembered state and a classifier that can patch single entries;
// otherwise, and after any error (the memory is dropped then), the caller
// applies in full.
func (r *Reconciler) writeDelta(ctx context.Context, d *plan.Delta) (Result, error) {
	res := Result{Dev: r.dev, Incremental: true, Adopted: true}
	st := r.held
	r.held = nil
	if st == nil || st.link == nil || st.tree == nil {
		return res, fmt.Errorf("dev %s: nothing remembered to update: %w", r.dev, shaper.ErrFullApplyNeeded)
	}
	pt, ok := st.cls.(classify.Patcher)
	if !ok {
		return res, fmt.Errorf("dev %s: classifier %s cannot patch entries: %w", r.dev, st.cls.Kind(), shaper.ErrFullApplyNeeded)
	}
	res.ClassifierKind, res.LeafKind = st.cls.Kind(), st.leaf
	start := r.writes
	w := deltaWriter{r: r, st: st, env: classify.Env{Handle: r.h, Link: st.link, Root: rootHandle()}, pt: pt, res: &res,
		t: &plan.Tree{Major: plan.OwnedMajor, Leaf: st.tree.Leaf}}
	err := w.write(ctx, d)
	res.Writes = r.writes - start
	if err != nil {
		return res, err
	}
	r.held = st
	return res, nil
}

// deltaWriter is one writeDelta in progress.
type deltaWriter struct {
	r   *Reconciler
	st  *devState
	env classify.Env
	pt  classify.Patcher
	res *Result
	t   *plan.Tree // the major and leaf spec, for handles and leaf qdiscs
}

func (w *deltaWriter) write(ctx context.Context, d *plan.Delta) error {
	if err := w.patch(ctx, d.Unbind, nil); err != nil {
		return err
	}
	for _, m := range d.Del {
		a, ok := w.st.classes.Get(m)
		if !ok {
			return fmt.Errorf("dev %s: class %s to delete is not remembered: %w", w.r.dev, w.t.Handle(m), shaper.ErrFullApplyNeeded)
		}
		if err := w.r.do(func() error { return w.r.classDel(w.st.ifindex, m, a) }); err != nil {
			return fmt.Errorf("dev %s: delete class %s: %w", w.r.dev, w.t.Handle(m), err)
		}
		w.st.deleted(w.t, m)
		w.res.Deleted = append(w.res.Deleted, m)
	}
	for _, c := range d.Create {
		if err := w.create(ctx, c); err != nil {
			return err
		}
	}
	for _, c := range d.Change {
		hc, over, err := w.r.writeClass(w.st.link, w.t, c, false)
		if err != nil {
			return fmt.Errorf("dev %s: change %s class %s: %w", w.r.dev, c.Role, w.t.Handle(c.Minor), err)
		}
		w.st.written(hc, over)
		w.res.Changed = append(w.res.Changed, c.Minor)
		// A new ceil or budget resizes a FIFO leaf.
		if err := w.leaf(c); err != nil {
			return err
		}
	}
	return w.patch(ctx, nil, d.Bind)
}

// create creates one class and, for a leaf, its leaf qdisc.
func (w *deltaWriter) create(ctx context.Context, c plan.Class) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	hc, over, err := w.r.writeClass(w.st.link, w.t, c, true)
	if err != nil {
		return fmt.Errorf("dev %s: create %s class %s: %w", w.r.dev, c.Role, w.t.Handle(c.Minor), err)
	}
	w.st.written(hc, over)
	delete(w.st.byParent, w.t.ClassID(c.Parent))
	w.res.Created = append(w.res.Created, c.Minor)
	return w.leaf(c)
}

// leaf writes leaf class c's leaf qdisc where the remembered one is not
// what c asks for.
func (w *deltaWriter) leaf(c plan.Class) error {
	lf, ok := leaves[w.st.leaf]
	if !ok || !c.IsLeaf() || lf.matches(w.st.link, w.t, c, w.st.byParent[w.t.ClassID(c.Minor)]) {
		return nil
	}
	if q := lf.want(w.st.link, w.t, c); q != nil {
		if err := w.r.do(func() error { return w.r.replaceLeaf(w.st.link, q) }); err != nil {
			return fmt.Errorf("dev %s: leaf %s under class %s: %w", w.r.dev, w.st.leaf, w.t.Handle(c.Minor), err)
		}
		w.st.byParent[w.t.ClassID(c.Minor)] = asKernel(w.t, q)
		w.res.Leaves = append(w.res.Leaves, c.Minor)
	}
	return nil
}

// patch unbinds del and binds put through the classifier.
func (w *deltaWriter) patch(ctx context.Context, del, put []classify.Entry) error {
	if len(del) == 0 && len(put) == 0 {
		return nil
	}
	cr, err := w.pt.Patch(ctx, w.env, del, put)
	w.r.writes += cr.Writes
	w.res.Classifier.Add(cr)
	if err != nil {
		return fmt.Errorf("dev %s: classifier %s: %w", w.r.dev, w.st.cls.Kind(), err)
	}
	return nil
}
