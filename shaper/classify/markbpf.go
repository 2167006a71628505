package classify

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// bpfName names the program, map and filter of the mark classifier.
const (
	bpfProgName = "gtpqos_mark24"
	bpfMapName  = "gtpqos_marks"
	// bpfFilterName names the current program (it masks the mark with
	// shaper.MarkMask); bpfFilterPrefix finds any version, so an older program
	// (it used all 32 bits) is replaced rather than adopted.
	bpfFilterName   = "gtpqos_mark24"
	bpfFilterPrefix = "gtpqos_mark"
	// bpfMaxEntries bounds the mark map (one entry per flow class).
	bpfMaxEntries = 1 << 16
)

// MarkBPF classifies by skb->mark with one cls_bpf filter in
// direct-action mode on the root HTB qdisc (prio BPFPrio). Its program,
// bpf/mark.c (compiled by bpf2go; the object is committed), looks the
// mark up in a BPF hash map mark -> class minor and sets skb->tc_classid;
// the filter's classid supplies the major. A miss returns TC_ACT_UNSPEC, so
// HTB sends the packet to its default class. The cost is one hash lookup
// whatever the number of flows.
//
// Why cls_bpf on the HTB root rather than skb->priority from clsact: it lives
// inside the qdisc gtpqos owns (deleted with it, nothing else on the device
// to clean up), and it leaves skb->priority, which applications set with
// SO_PRIORITY, alone.
//
// After a restart the classifier adopts the installed program and its map
// (found through the filter's program id), so nothing is reloaded.
type MarkBPF struct {
	m      *ebpf.Map
	prog   *ebpf.Program
	progID int
	writes int
}

// NewMarkBPF returns the cls_bpf mark classifier. Nothing is
// loaded until Sync.
func NewMarkBPF() *MarkBPF { return &MarkBPF{} }

// Kind returns shaper.KindBPF.
func (c *MarkBPF) Kind() shaper.ClassifierKind { return shaper.KindBPF }

func (c *MarkBPF) TakeWrites() int { n := c.writes; c.writes = 0; return n }

// Owns implements FilterOwner: the cls_bpf filter at BPFPrio named
// gtpqos_mark* (any version).
func (c *MarkBPF) Owns(f netlink.Filter) bool {
	b, ok := f.(*netlink.BpfFilter)
	return ok && b.Priority == BPFPrio && strings.HasPrefix(b.Name, bpfFilterPrefix)
}

// MissingKey implements KeyNeeder: the program looks the mark up.
func (c *MarkBPF) MissingKey(e Entry) string { return missingMark(e) }

// load creates a fresh map and program from the compiled bpf/mark.c.
func (c *MarkBPF) load() (*ebpf.Map, *ebpf.Program, error) {
	_ = rlimit.RemoveMemlock() // only matters on kernels before 5.11
	spec, err := loadMark()
	if err != nil {
		return nil, nil, fmt.Errorf("mark classifier object: %w", err)
	}
	ms := spec.Maps[bpfMapName]
	if ms == nil || spec.Programs[bpfProgName] == nil {
		return nil, nil, fmt.Errorf("mark classifier object lacks map %s or program %s", bpfMapName, bpfProgName)
	}
	ms.MaxEntries = bpfMaxEntries
	m, err := ebpf.NewMap(ms)
	if err != nil {
		return nil, nil, bpfPermErr("create BPF map "+bpfMapName, fmt.Errorf("create BPF map %s: %w", bpfMapName, err), BPFCaps)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{bpfMapName: m}})
	if err != nil {
		m.Close()
		return nil, nil, bpfPermErr("load BPF program "+bpfProgName, fmt.Errorf("load BPF program %s: %w", bpfProgName, err), BPFCaps)
	}
	defer coll.Close()
	return m, coll.DetachProgram(bpfProgName), nil
}

// installed finds the classifier's filter (any version) and returns its
// program id.
func (c *MarkBPF) Installed(env Env) (bool, int) {
	f := c.installedFilter(env)
	if f == nil {
		return false, 0
	}
	return true, f.Id
}

// installedFilter returns the classifier's filter of any version, or nil.
func (c *MarkBPF) installedFilter(env Env) *netlink.BpfFilter {
	fs, err := env.Handle.FilterList(env.Link, env.Root)
	if err != nil {
		return nil
	}
	for _, f := range fs {
		b, ok := f.(*netlink.BpfFilter)
		if ok && b.Priority == BPFPrio && strings.HasPrefix(b.Name, bpfFilterPrefix) {
			return b
		}
	}
	return nil
}

// current reports whether f runs this version's program.
func current(f *netlink.BpfFilter) bool {
	return strings.HasPrefix(f.Name, bpfFilterName)
}

// adopt opens the installed program (kernel id id) and its map: by their
// pins where they are pinned, else by id.
func (c *MarkBPF) adopt(env Env, id int) error {
	if ok, err := c.adoptPinned(env, id); ok || err != nil {
		return err
	}
	p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return adoptByIDErr(env, id, err)
	}
	info, err := p.Info()
	if err != nil {
		p.Close()
		return fmt.Errorf("BPF program %d info: %w", id, err)
	}
	ids, _ := info.MapIDs()
	if len(ids) != 1 {
		p.Close()
		return fmt.Errorf("BPF program %d has %d maps, want 1", id, len(ids))
	}
	m, err := ebpf.NewMapFromID(ids[0])
	if err != nil {
		p.Close()
		return fmt.Errorf("open BPF map %d: %w", ids[0], err)
	}
	if m.KeySize() != 4 || m.ValueSize() != 4 {
		p.Close()
		m.Close()
		return fmt.Errorf("BPF map %d has key/value size %d/%d, want 4/4", ids[0], m.KeySize(), m.ValueSize())
	}
	c.Close()
	c.m, c.prog, c.progID = m, p, id
	return nil
}

func (c *MarkBPF) Close() {
	if c.m != nil {
		c.m.Close()
	}
	if c.prog != nil {
		c.prog.Close()
	}
	c.m, c.prog, c.progID = nil, nil, 0
}

func (c *MarkBPF) filter(env Env, fd int) *netlink.BpfFilter {
	return &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: env.Link.Attrs().Index, Parent: env.Root, Handle: 1,
			Priority: BPFPrio, Protocol: unix.ETH_P_ALL},
		ClassId: env.Root, Fd: fd, Name: bpfFilterName, DirectAction: true,
	}
}

// ensure makes sure the filter is installed and c.m is its map.
func (c *MarkBPF) ensure(env Env, res *Result) error {
	if f := c.installedFilter(env); f != nil && current(f) {
		if c.m != nil && c.progID == f.Id {
			return nil
		}
		return c.adopt(env, f.Id)
	} else if f != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("replaced the older cls_bpf mark classifier %s (no mark mask)", f.Name))
	}
	pins, pinErr := markPins(env)
	m, p, err := c.load()
	if err != nil {
		return err
	}
	if pinErr == nil {
		pinErr = pinMark(pins, m, p)
	}
	if pinErr != nil && !HasCap(unix.CAP_SYS_ADMIN) {
		m.Close()
		p.Close()
		return pinErr
	}
	if err := env.Handle.FilterReplace(c.filter(env, p.FD())); err != nil {
		m.Close()
		p.Close()
		return fmt.Errorf("attach cls_bpf filter %s: %w", bpfFilterName, err)
	}
	res.Writes++
	res.Notes = append(res.Notes, "loaded the cls_bpf mark classifier (map mark -> class)")
	c.Close()
	c.m, c.prog = m, p
	if ok, id := c.Installed(env); ok {
		c.progID = id
	}
	return nil
}

func (c *MarkBPF) entries() (map[uint32]uint32, error) {
	out := map[uint32]uint32{}
	var k, v uint32
	it := c.m.Iterate()
	for it.Next(&k, &v) {
		out[k] = v
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read BPF map %s: %w", bpfMapName, err)
	}
	return out, nil
}

// Sync installs the program if needed and makes the map hold exactly the
// desired mark -> minor entries.
func (c *MarkBPF) Sync(ctx context.Context, env Env, table Table) (Result, error) {
	var res Result
	if err := c.ensure(env, &res); err != nil {
		return res, err
	}
	have, err := c.entries()
	if err != nil {
		return res, err
	}
	want := markTable(table)
	for k, id := range want {
		want[k] = id & 0xffff // the filter's classid supplies the major
	}
	for k := range have {
		if _, ok := want[k]; ok {
			continue
		}
		if err := c.m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return res, fmt.Errorf("delete mark %#x from BPF map: %w", k, err)
		}
		res.Writes++
		res.Deleted++
	}
	for k, v := range want {
		old, ok := have[k]
		if ok && old == v {
			continue
		}
		if err := c.m.Put(k, v); err != nil {
			return res, fmt.Errorf("map mark %#x -> class %s in BPF map: %w", k, Handle(env.Root|v), err)
		}
		res.Writes++
		if ok {
			res.Changed++
		} else {
			res.Added++
		}
	}
	return res, nil
}

// Bindings returns the map's mark -> class entries (none if not installed).
func (c *MarkBPF) Bindings(ctx context.Context, env Env) ([]Binding, error) {
	ok, id := c.Installed(env)
	if !ok {
		return nil, nil
	}
	if c.m == nil || c.progID != id {
		if err := c.adopt(env, id); err != nil {
			return nil, err
		}
	}
	have, err := c.entries()
	if err != nil {
		return nil, err
	}
	out := make([]Binding, 0, len(have))
	for k, v := range have {
		out = append(out, Binding{Minor: uint16(v), Mark: k})
	}
	return out, nil
}

// Remove deletes the cls_bpf filter; the program and map go with it.
func (c *MarkBPF) Remove(ctx context.Context, env Env) error {
	defer c.Close()
	if ok, _ := c.Installed(env); !ok {
		return unpinMark(env) // pins a removed device left
	}
	if err := env.Handle.FilterDel(c.filter(env, -1)); err != nil {
		return fmt.Errorf("delete cls_bpf filter %s: %w", bpfFilterName, err)
	}
	c.writes++
	return unpinMark(env)
}

// Probe loads (and drops) the program to learn whether the kernel allows it.
func (c *MarkBPF) Probe(ctx context.Context, env Env) error {
	m, p, err := c.load()
	if err != nil {
		return err
	}
	p.Close()
	m.Close()
	return nil
}
