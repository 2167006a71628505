package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
	"github.com/free5gc/gtpqos/watch"
)

func init() {
	register(command{
		name:    "reset",
		summary: "remove what gtpqos created on a device: its HTB tree and its GTP-U classifier filters (nothing else)",
		run:     runReset,
	})
}

func runReset(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("reset", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dev := fs.String("dev", "", "device")
	lockDir := fs.String("lock-dir", watch.DefaultLockDir, "where gtpqos watch keeps its device locks: reset refuses a device a running watch holds")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: gtpqos reset --dev IF [--lock-dir /run/gtpqos]")
			fmt.Fprintln(stdout, "Removes the HTB tree rooted at 6771: and the clsact filters named gtpqos-* (stock-gtp5g GTP-U classifier); foreign qdiscs and filters stay.")
			return nil
		}
		return usagef("%v", err)
	}
	if *dev == "" {
		return usagef("--dev IF is required")
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	// A running watch would rebuild what reset removes.
	h, done, err := openWatchedDev(*dev, *lockDir, "reset", "stop it first; with --cleanup-on-exit it removes its trees itself")
	if err != nil {
		return err
	}
	defer done()
	lines, err := resetDevice(ctx, h, *dev)
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	return err
}

// resetDevice removes what gtpqos owns on dev through h and returns one
// line per thing removed (or one line saying nothing was):
//
//   - the gtpqos clsact filters (cls_bpf at gtpu.FilterPriority named
//     gtpu.NamePrefix+...) on the egress and ingress hooks: the stock-gtp5g
//     GTP-U classifier's gtpu_egress / gtpu_ingress on N3 and mark_egress on
//     N6. Filters of any other name or priority are left alone.
//   - the clsact qdisc, only when gtpqos added it (its filters' names end in
//     gtpu.ClsactOwnedSuffix) and it is empty once they are gone; a
//     clsact that was there before gtpqos, or that holds anyone else's
//     filter, stays.
//   - the HTB tree rooted at htb.OwnedMajor (with the fw/bpf mark
//     classifier under it). A foreign root qdisc stays.
func resetDevice(ctx context.Context, h *netlink.Handle, dev string) ([]string, error) {
	link, err := h.LinkByName(dev)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", dev, err)
	}
	var lines []string
	hadClsact, err := hasClsact(h, link)
	if err != nil {
		return nil, err
	}
	removedFilter := false
	for _, hook := range []gtpu.Hook{gtpu.Egress, gtpu.Ingress} {
		fs, err := ourFilters(h, link, hook)
		if err != nil {
			return lines, err
		}
		for _, f := range fs {
			a := gtpu.Attachment{LinkIndex: link.Attrs().Index, LinkName: dev, Hook: hook, Name: f.Name, ProgramID: uint32(f.Id)}
			if err := gtpu.Detach(h, a); err != nil {
				return lines, fmt.Errorf("dev %s: remove clsact %s filter %s: %w", dev, hook, f.Name, err)
			}
			removedFilter = true
			note := ""
			if gtpu.BaseName(f.Name) == gtpu.FilterUplinkN3 {
				note = "; the N6 tree's uplink flows lose their marks and reach its default class"
			}
			lines = append(lines, fmt.Sprintf("dev %s: removed clsact %s filter %s (BPF program %d, GTP-U classifier%s)", dev, hook, f.Name, f.Id, note))
		}
	}
	if hadClsact && removedFilter {
		still, err := hasClsact(h, link)
		if err != nil {
			return lines, err
		}
		if !still {
			lines = append(lines, fmt.Sprintf("dev %s: removed the clsact qdisc (no filters left on it)", dev))
		}
	}

	rec := htb.NewReconciler(h, dev)
	t, err := rec.Actual(ctx)
	switch {
	case errors.Is(err, shaper.ErrNotOwned) || (err == nil && t == nil):
		if len(lines) == 0 {
			return []string{fmt.Sprintf("dev %s: no gtpqos tree or classifier (nothing removed)", dev)}, nil
		}
		return append(lines, fmt.Sprintf("dev %s: no gtpqos tree", dev)), nil
	case err != nil:
		return lines, err
	}
	if err := rec.Reset(ctx); err != nil {
		return lines, err
	}
	what := ""
	if t.Classifier != "" {
		what = fmt.Sprintf(", classifier %s", t.Classifier)
	}
	return append(lines, fmt.Sprintf("dev %s: removed the gtpqos tree (%d classes%s)", dev, len(t.Classes), what)), nil
}

// ourFilters lists the gtpqos cls_bpf filters on link's clsact hook.
func ourFilters(h *netlink.Handle, link netlink.Link, hook gtpu.Hook) ([]*netlink.BpfFilter, error) {
	parent := uint32(netlink.HANDLE_MIN_EGRESS)
	if hook == gtpu.Ingress {
		parent = netlink.HANDLE_MIN_INGRESS
	}
	fs, err := h.FilterList(link, parent)
	if err != nil {
		return nil, fmt.Errorf("dev %s: list clsact %s filters: %w", link.Attrs().Name, hook, err)
	}
	var out []*netlink.BpfFilter
	for _, f := range fs {
		bf, ok := f.(*netlink.BpfFilter)
		if ok && f.Attrs().Priority == gtpu.FilterPriority && strings.HasPrefix(bf.Name, gtpu.NamePrefix) {
			out = append(out, bf)
		}
	}
	return out, nil
}

// hasClsact reports whether link has a clsact qdisc.
func hasClsact(h *netlink.Handle, link netlink.Link) (bool, error) {
	qs, err := h.QdiscList(link)
	if err != nil {
		return false, fmt.Errorf("dev %s: list qdiscs: %w", link.Attrs().Name, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_CLSACT && q.Type() == "clsact" {
			return true, nil
		}
	}
	return false, nil
}
