package edtbackend

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// planClasses lists p's classes: the tree's, and one per flow (its map
// entry, under the non-GBR class) carrying the flow.
func planClasses(p *Plan) []shaper.ClassState {
	out := make([]shaper.ClassState, 0, len(p.Classes)+len(p.Flows))
	for _, c := range p.Classes {
		out = append(out, treeClass(c.Minor, c.Parent, c.Role, c.Rate, c.Ceil))
	}
	for _, f := range p.Flows {
		out = append(out, shaper.ClassState{Handle: FlowHandle(f.ID), Parent: Handle(MinorNonGBR), Role: shaper.RoleFlow,
			Flow: f.Flow.ID, Name: f.Flow.Name, GBR: f.Flow.GBR, MBR: f.Flow.MBR, SEID: f.Flow.ID.SEID,
			Key: shaper.Key{Mark: f.Flow.Mark, TEID: f.Flow.TEID, QFI: f.Flow.QFI}, Rate: f.Spec.GBR, Ceil: f.Spec.MBR})
	}
	return out
}

func treeClass(minor, parent uint16, role shaper.Role, rate, ceil uint64) shaper.ClassState {
	c := shaper.ClassState{Handle: Handle(minor), Role: role, Rate: rate, Ceil: ceil}
	if parent != 0 {
		c.Parent = Handle(parent)
	}
	return c
}

// Classes implements shaper.Reader.
func (b *Backend) Classes() []shaper.ClassState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		return nil
	}
	return planClasses(b.last)
}

// Inspect implements shaper.Reader: the tree's classes with their
// counters, and one flow class per map entry (key: its marks, counters:
// the program's) read from the pinned maps.
func (b *Backend) Inspect(ctx context.Context) (*shaper.Inspection, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	in := &shaper.Inspection{Dev: b.dev, Backend: Name}
	if b.conn == nil {
		return nil, errClosed
	}
	link, err := b.link()
	if err != nil {
		return nil, err
	}
	root, err := b.readRoot(link)
	if err != nil {
		return nil, err
	}
	if !root.ours {
		if root.foreign != "" {
			return in, fmt.Errorf("dev %s: root qdisc %s: %w", b.dev, root.foreign, shaper.ErrNotOwned)
		}
		return in, nil
	}
	in.Owned, in.Root, in.Default = true, fmt.Sprintf("%x:", Major), Handle(MinorDefault)
	in.Accounting, in.Overhead = accounting(root.overhead), root.overhead
	if in.Classes, err = b.kernelClasses(link); err != nil {
		return nil, err
	}
	pc, err := b.adopt()
	if err != nil {
		return nil, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	if pc == nil {
		in.Problems = append(in.Problems, fmt.Sprintf("dev %s: tree %x: without its pinned program: no flow is paced", b.dev, Major))
		return in, nil
	}
	in.Classifier, in.Leaf = Name, "fq"
	return in, b.inspectMaps(pc, in)
}

// inspectMaps adds the program's flows and its unknown-mark count.
func (b *Backend) inspectMaps(pc *edt.Pacer, in *shaper.Inspection) error {
	flows, err := pc.ReadFlows()
	if err != nil {
		return fmt.Errorf("dev %s: %w", b.dev, err)
	}
	for id, fi := range flows {
		c := shaper.ClassState{Handle: FlowHandle(id), Parent: Handle(MinorNonGBR), Role: shaper.RoleFlow,
			Rate: fi.Spec.GBR, Ceil: fi.Spec.MBR, Counters: flowCounters(fi.State)}
		if len(fi.Spec.Marks) > 0 {
			c.Key.Mark = fi.Spec.Marks[0]
		}
		if len(fi.Spec.Keys) > 0 {
			c.Key.TEID, c.Key.QFI = fi.Spec.Keys[0].TEID, fi.Spec.Keys[0].QFI
		}
		if f, ok := b.plannedFlow(id); ok {
			c.Flow, c.Name, c.GBR, c.MBR, c.Key.QFI, c.Key.TEID = f.ID, f.Name, f.GBR, f.MBR, f.QFI, f.TEID
		}
		in.Classes = append(in.Classes, c)
	}
	st, err := pc.Stats()
	if err != nil {
		return fmt.Errorf("dev %s: %w", b.dev, err)
	}
	unplaced := st.UnknownPackets
	in.Unplaced = &unplaced
	rules, err := pc.ReadRules()
	if err != nil {
		return fmt.Errorf("dev %s: %w", b.dev, err)
	}
	in.Attachments = append(in.Attachments, programAttachment(b.dev, pc, len(flows), len(rules), st))
	return nil
}

// programAttachment describes the program for status: its flows, the
// TEIDs whose SDF rules it matches, and how it found its packets.
func programAttachment(dev string, pc *edt.Pacer, flows, teids int, st edt.Stats) shaper.Attachment {
	a := shaper.Attachment{Dev: dev, Hook: "egress", Name: FilterName, Entries: flows, SDFTEIDs: teids,
		Counters: map[string]uint64{"unknown": st.UnknownPackets, "stale": st.StalePackets, "no-session": st.NoSessionPackets,
			"gtpu": st.GTPUPackets, "sdf": st.SDFPackets, "frag": st.FragPackets}}
	if info, err := pc.Program().Info(); err == nil {
		if id, ok := info.ID(); ok {
			a.ProgramID = uint32(id)
		}
	}
	return a
}

// plannedFlow returns the flow the last plan gave map id.
func (b *Backend) plannedFlow(id uint32) (shaper.Flow, bool) {
	if b.last == nil {
		return shaper.Flow{}, false
	}
	for _, f := range b.last.Flows {
		if f.ID == id {
			return f.Flow, true
		}
	}
	return shaper.Flow{}, false
}

func flowCounters(s edt.FlowState) shaper.Counters {
	return shaper.Counters{Bytes: s.Bytes, Packets: s.Packets, Drops: s.Drops}
}

// kernelClasses reads the tree's HTB classes with their counters.
func (b *Backend) kernelClasses(link netlink.Link) ([]shaper.ClassState, error) {
	cls, err := b.h.ClassList(link, 0)
	if err != nil {
		return nil, fmt.Errorf("dev %s: list classes: %w", b.dev, err)
	}
	var out []shaper.ClassState
	for _, c := range cls {
		hc, ok := c.(*netlink.HtbClass)
		if !ok {
			continue
		}
		maj, minor := netlink.MajorMinor(hc.Handle)
		if maj != Major {
			continue
		}
		_, pmin := netlink.MajorMinor(hc.Parent)
		role := shaper.RoleShared
		switch minor {
		case MinorLink:
			role, pmin = shaper.RoleLink, 0
		case MinorDefault:
			role = shaper.RoleDefault
		}
		st := treeClass(minor, pmin, role, hc.Rate*8, hc.Ceil*8)
		if s := hc.Statistics; s != nil {
			st.Counters = shaper.Counters{Bytes: s.Basic.Bytes, Packets: uint64(s.Basic.Packets), Drops: uint64(s.Queue.Drops),
				Overlimits: uint64(s.Queue.Overlimits), Backlog: uint64(s.Queue.Backlog), Qlen: uint64(s.Queue.Qlen)}
		}
		out = append(out, st)
	}
	return out, nil
}

// Counters implements shaper.Reader: the tree's classes and the flows, by
// handle.
func (b *Backend) Counters(ctx context.Context) (map[string]shaper.Counters, error) {
	in, err := b.Inspect(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]shaper.Counters, len(in.Classes))
	for _, c := range in.Classes {
		out[c.Handle] = c.Counters
	}
	return out, nil
}

// homeClass is the shared class a flow's packets go to: the guaranteed one
// for a GBR flow (its excess over the GBR goes on to the non-GBR class),
// else its own. It names the flow's counters as a tc class id, as HTB's
// class per flow does (metrics print it "6765:10"): the counters are still
// the flow's own, from the program's map.
func homeClass(s edt.FlowSpec) uint32 {
	if s.GBRClass != 0 {
		return s.GBRClass
	}
	return s.Class
}

// FlowCounters implements shaper.Reader: the program's counters of every
// flow the last apply planned, in one pass over the flows map.
func (b *Backend) FlowCounters(ctx context.Context) ([]shaper.FlowCounters, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.conn == nil:
		return nil, errClosed
	case b.failed && b.last != nil:
		return nil, fmt.Errorf("dev %s: the last write failed", b.dev)
	case b.last == nil || b.pacer == nil:
		return nil, nil
	}
	flows, err := b.pacer.ReadFlows()
	if err != nil {
		return nil, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	out := make([]shaper.FlowCounters, 0, len(b.last.Flows))
	for _, f := range b.last.Flows {
		if fi, ok := flows[f.ID]; ok {
			out = append(out, shaper.FlowCounters{Flow: f.Flow.ID, Class: homeClass(f.Spec), QFI: f.Flow.QFI, Counters: flowCounters(fi.State)})
		}
	}
	return out, nil
}
