package htb

import (
	"fmt"
	"sort"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/htb/plan"
)

// foreignChain is a filter chain (one priority and protocol of one
// parent's filters) under the owned root that no classifier of gtpqos
// installed: another tool's filter, or a probe filter a killed run left.
// Everything under the 6771: root is gtpqos's, so such a chain is drift:
// on the root it runs before or after the classifier and can steal
// packets; on the link class it is consulted for packets sent there
// (SO_PRIORITY naming the link class) and pins the classes it names
// against deletion.
type foreignChain struct {
	parent   uint32
	prio     uint16
	protocol uint16
	kind     string
}

func (c foreignChain) String() string {
	return fmt.Sprintf("%s filter at prio %d under %s", c.kind, c.prio, classify.Handle(c.parent))
}

// ownsFilter reports whether one of gtpqos's classifiers installed f on
// the root: the one given, or a built-in one (a classifier switched from
// is removed by removeOtherClassifiers, after the new one binds).
func (r *Reconciler) ownsFilter(f netlink.Filter) bool {
	cands := []classify.Classifier{r.builtin(classify.KindFw), r.builtin(classify.KindBPF)}
	if r.opts.Custom != nil {
		cands = append(cands, r.opts.Custom)
	}
	for _, c := range cands {
		if fo, ok := c.(classify.FilterOwner); ok && fo.Owns(f) {
			return true
		}
	}
	return false
}

// foreignChains lists the foreign filter chains on the root and on the
// link class. HTB never consults a leaf class's filters, and a session
// class's only for packets steered to the session class itself, which no
// gtpqos classifier does; their filters are not listed (a dump per class
// would cost more than the rest of a full run at 10k sessions). Such a
// filter can still pin a class: its deletion then fails, loudly.
func (r *Reconciler) foreignChains(link netlink.Link) ([]foreignChain, error) {
	parents := []uint32{rootHandle(), netlink.MakeHandle(plan.OwnedMajor, plan.LinkMinor)}
	seen := map[foreignChain]bool{}
	var out []foreignChain
	for _, p := range parents {
		fs, err := r.h.FilterList(link, p)
		if err != nil {
			return nil, fmt.Errorf("dev %s: list filters under %s: %w", r.dev, classify.Handle(p), err)
		}
		for _, f := range fs {
			a := f.Attrs()
			if p == rootHandle() && r.ownsFilter(f) {
				continue
			}
			c := foreignChain{parent: p, prio: a.Priority, protocol: a.Protocol, kind: f.Type()}
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].parent != out[j].parent {
			return out[i].parent < out[j].parent
		}
		return out[i].prio < out[j].prio
	})
	return out, nil
}

// removeForeignFilters deletes the foreign filter chains (a full run
// only: an incremental run trusts its memory and reads nothing). It runs
// first, so a foreign filter neither steals packets meanwhile nor pins a
// class the run deletes.
func (u *run) removeForeignFilters() error {
	chains, err := u.r.foreignChains(u.link)
	if err != nil {
		return err
	}
	for _, c := range chains {
		f := &netlink.GenericFilter{FilterType: c.kind, FilterAttrs: netlink.FilterAttrs{LinkIndex: u.link.Attrs().Index,
			Parent: c.parent, Priority: c.prio, Protocol: c.protocol}}
		if err := u.r.do(func() error { return u.r.h.FilterDel(f) }); err != nil {
			return fmt.Errorf("dev %s: remove foreign %s: %w", u.r.dev, c, err)
		}
		u.res.Notes = append(u.res.Notes, fmt.Sprintf("removed a foreign %s (everything under the %x: root is gtpqos's)", c, plan.OwnedMajor))
	}
	return nil
}

// foreignFilterProblems describes the foreign filter chains of the
// device, for Inspect (and so `gtpqos verify`).
func (r *Reconciler) foreignFilterProblems() ([]string, error) {
	link, err := r.link()
	if err != nil {
		return nil, err
	}
	chains, err := r.foreignChains(link)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range chains {
		out = append(out, fmt.Sprintf("dev %s: foreign %s: not gtpqos's classifier, it can steer packets past it; `gtpqos apply` (or the watch's next full resync) removes it",
			r.dev, c))
	}
	return out, nil
}
