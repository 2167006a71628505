package edtbackend

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/edt"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// FilterName is the program's filter on the clsact egress hook (gtpu's
// naming, so `gtpqos reset` and status know it as gtpqos's).
const FilterName = gtpu.NamePrefix + "edt-egress"

// Apply implements shaper.Writer: it plans flows, checks the kernel, and
// makes the device hold the tree, the program's maps and its attachment,
// writing only what differs.
func (b *Backend) Apply(ctx context.Context, flows []shaper.Flow, pol shaper.Policy, opt shaper.ApplyOptions) (shaper.Report, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.apply(ctx, flows, pol, opt)
}

func (b *Backend) apply(ctx context.Context, flows []shaper.Flow, pol shaper.Policy, opt shaper.ApplyOptions) (shaper.Report, error) {
	rep := shaper.Report{Dev: b.dev, Backend: Name}
	given := pol
	b.inc = nil // until this apply succeeds
	if b.conn == nil {
		return rep, errClosed
	}
	link, err := b.link()
	if err != nil {
		return rep, err
	}
	if pol, err = b.resolveOverhead(link, pol); err != nil {
		return rep, err
	}
	p, err := b.planApply(flows, pol)
	if err != nil {
		return rep, err
	}
	if b.opt.Direction == shaper.Downlink && p.Classes != nil {
		for _, n := range planRules(p, b.sdf) {
			rep.Changes = append(rep.Changes, shaper.Change{Op: "sync", Object: "sdf", Detail: n})
		}
	}
	rep.Problems, rep.Accounting, rep.Overhead = p.Problems, accounting(p.Overhead), p.Overhead
	if bad, ok := shaper.FirstError(p.Problems); ok && (p.Classes == nil || opt.Strict) {
		return rep, fmt.Errorf("dev %s: %w", b.dev, bad)
	}
	if err := Probe(); err != nil {
		return rep, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	b.failed, b.trusted = true, false // until this apply succeeds
	if err := b.write(link, p, &rep); err != nil {
		return rep, err
	}
	if err := b.syncMarker(ctx, link, p, &rep); err != nil {
		return rep, err
	}
	b.last, b.pol, b.trusted, b.failed = p, pol, true, false
	b.flows = map[shaper.FlowID]shaper.Flow{}
	for _, f := range flows {
		b.flows[f.ID] = f
	}
	b.inc = b.newIncremental(p, flows, given, pol)
	b.finish(p, &rep, opt)
	return rep, nil
}

// syncMarker hands the flows' marks, TEIDs and QFIs to the N3 ingress
// marker (Options.Marker), when there is one.
func (b *Backend) syncMarker(ctx context.Context, link netlink.Link, p *Plan, rep *shaper.Report) error {
	if b.opt.Marker == nil {
		return nil
	}
	t := classify.Table{Default: ClassID(MinorDefault)}
	for _, f := range p.Flows {
		t.Entries = append(t.Entries, classify.Entry{ClassID: f.Spec.Class, Flow: f.Flow.ID, Mark: f.Flow.Mark, TEID: f.Flow.TEID, QFI: f.Flow.QFI})
	}
	res, err := b.opt.Marker.Sync(ctx, classify.Env{Handle: b.h, Link: link, Root: ClassID(0)}, t)
	rep.Writes += res.Writes
	for _, n := range res.Notes {
		rep.Changes = append(rep.Changes, shaper.Change{Op: "sync", Object: "gtpu", Detail: n})
	}
	if err != nil {
		return fmt.Errorf("dev %s: uplink marks on N3: %w", b.dev, err)
	}
	return nil
}

// resolveOverhead fixes pol's overhead from the device (auto) as the
// HTB backend does.
func (b *Backend) resolveOverhead(link netlink.Link, pol shaper.Policy) (shaper.Policy, error) {
	if pol.Accounting != shaper.AccountPacket || pol.Overhead.Fixed {
		if pol.Accounting != shaper.AccountPacket {
			pol.Overhead = shaper.Overhead{Fixed: true}
		}
		return pol, nil
	}
	e, err := htb.DeviceEncap(b.h, link, b.opt.Direction)
	if err != nil {
		return pol, err
	}
	over, _ := pol.ResolveOverhead(b.opt.Direction, e)
	pol.Overhead = shaper.Overhead{Fixed: true, Bytes: over}
	return pol, nil
}

// write makes the device hold p: the program (loaded or adopted), the
// tree, the maps, the pins and the attachment; a tree this call created
// is removed again when a later step fails. On a device without the tree
// the program is attached first: a tree without it puts every packet in
// its default class (in a TCG guest the first clsact attach takes 0.6 s,
// loading its modules: 300 packets of greedy flows), which then drains
// them, unpaced, for seconds. On the device's tree the classes are
// written first, so that the program never names a class it lacks.
func (b *Backend) write(link netlink.Link, p *Plan, rep *shaper.Report) (err error) {
	root, err := b.readRoot(link)
	if err != nil {
		return err
	}
	if root.foreign != "" && !b.opt.Force {
		return fmt.Errorf("dev %s: root qdisc %s: %w (the edt backend's root is htb %x:); use --force to replace it", b.dev, root.foreign, shaper.ErrNotOwned, Major)
	}
	// GTP-U parsing starts after the link-layer header: none on an L3
	// device (EncapType none), as the gtpu classifier has it.
	pc, fresh, err := b.pacerFor(p, link.Attrs().EncapType == "none")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil && pc != b.pacer {
			_ = pc.Close()
		}
	}()
	created := !root.ours
	defer func() {
		if err != nil && created { // leave the device as it was
			_ = b.deleteRoot(link)
			_ = gtpu.Detach(b.h, gtpu.Attachment{LinkIndex: link.Attrs().Index, LinkName: b.dev, Hook: gtpu.Egress, Name: FilterName})
			if fresh {
				_, _ = b.unpin()
			}
		}
	}()
	if created {
		if err := b.writeProgram(link, pc, fresh, p, rep); err != nil {
			return err
		}
		return b.writeTree(link, p, root, rep)
	}
	if err := b.writeTree(link, p, root, rep); err != nil {
		return err
	}
	return b.writeProgram(link, pc, fresh, p, rep)
}

// writeProgram makes pc's maps hold p, pins pc and attaches it.
func (b *Backend) writeProgram(link netlink.Link, pc *edt.Pacer, fresh bool, p *Plan, rep *shaper.Report) error {
	if err := b.syncMaps(pc, fresh, p, rep); err != nil {
		return err
	}
	if err := b.install(pc); err != nil {
		return err
	}
	_, wrote, err := gtpu.Attach(b.h, link, gtpu.Egress, pc.Program(), FilterName[len(gtpu.NamePrefix):])
	if err != nil {
		return fmt.Errorf("dev %s: %w", b.dev, err)
	}
	if wrote {
		rep.Writes++
		rep.Changes = append(rep.Changes, shaper.Change{Op: "sync", Object: Name, Detail: "program on clsact egress"})
	}
	return nil
}

// writeTree writes the root, classes and leaves when the device's differ
// from p's.
func (b *Backend) writeTree(link netlink.Link, p *Plan, root rootState, rep *shaper.Report) error {
	withRoot := !root.ours || root.overhead != p.Overhead
	var have map[uint32]*netlink.HtbClass
	if !withRoot {
		same, h, err := b.treeMatches(link, p)
		if err != nil || same {
			return err
		}
		have = h
	}
	reqs, err := treeRequests(link, p, withRoot)
	if err != nil {
		return fmt.Errorf("dev %s: %w", b.dev, err)
	}
	if err := b.conn.Do(reqs...); err != nil {
		return fmt.Errorf("dev %s: write the tree: %w", b.dev, err)
	}
	rep.Writes += len(reqs)
	if withRoot {
		rep.Changes = append(rep.Changes, shaper.Change{Op: "add", Object: "qdisc", Class: fmt.Sprintf("%x:", Major), Detail: "htb root"})
	}
	for _, c := range p.Classes {
		if !withRoot && sameRates(have[ClassID(c.Minor)], c) {
			continue // rewritten as it was: not a change (a GBR sum moves two classes)
		}
		rep.Changes = append(rep.Changes, shaper.Change{Op: "change", Object: "class", Class: Handle(c.Minor), Role: c.Role,
			Rate: c.Rate, Ceil: c.Ceil, Detail: fmt.Sprintf("%s rate %s ceil %s", c.Name, shaper.FormatRate(c.Rate), shaper.FormatRate(c.Ceil))})
	}
	return nil
}

// finish fills the report's counts and summary.
func (b *Backend) finish(p *Plan, rep *shaper.Report, opt shaper.ApplyOptions) {
	rep.Flows, rep.ClassCount = len(p.Flows), len(p.Classes)
	if !opt.NoClassList {
		rep.Classes = planClasses(p)
	}
	rep.Summary = fmt.Sprintf("dev %s: edt tree %x: (%d shared classes), %d flows paced, %d sessions; %d writes",
		b.dev, Major, len(p.Classes)-1, len(p.Flows), len(p.Sessions), rep.Writes)
}

// Update implements shaper.Writer: the given sessions' flows replace
// theirs and the rest stay; only the maps' differences are written.
func (b *Backend) Update(ctx context.Context, sessions map[uint64][]shaper.Flow, pol shaper.Policy) (shaper.Report, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil || b.failed {
		return shaper.Report{Dev: b.dev, Backend: Name}, fmt.Errorf("dev %s: %w", b.dev, shaper.ErrFullApplyNeeded)
	}
	if rep, ok, err := b.updateFast(sessions, pol); ok {
		if err != nil {
			b.failed, b.inc = true, nil
		}
		return touchedOnly(rep), err
	}
	all := maps.Clone(b.flows)
	for id := range b.flows {
		if _, ok := sessions[id.SEID]; ok {
			delete(all, id)
		}
	}
	for _, fs := range sessions {
		for _, f := range fs {
			all[f.ID] = f
		}
	}
	flows := slices.SortedFunc(maps.Values(all), func(a, c shaper.Flow) int { return shaper.CompareFlowID(a.ID, c.ID) })
	rep, err := b.apply(ctx, flows, pol, shaper.ApplyOptions{})
	if err != nil && !errors.Is(err, context.Canceled) {
		b.failed = true
	}
	return touchedOnly(rep), err
}

// touchedOnly keeps the report's classes an Update changed.
func touchedOnly(rep shaper.Report) shaper.Report {
	touched := map[string]bool{}
	for _, c := range rep.Changes {
		touched[c.Class] = true
	}
	rep.Classes = slices.DeleteFunc(rep.Classes, func(c shaper.ClassState) bool { return !touched[c.Handle] })
	return rep
}
