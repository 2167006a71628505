package gtpu

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
)

// Options configure a Classifier.
type Options struct {
	// N3 is the name of the N3 device (GTP-U toward the gNB). Downlink
	// shaping happens on its egress; uplink marking on its ingress.
	N3 string
	// QFIOnly keys every flow by QFI alone (TEID 0), ignoring TEIDs. It
	// exists to show why (TEID, QFI) is needed: two sessions using the same
	// QFI then share one entry, and so one class.
	QFIOnly bool
}

// Classifier classifies stock-gtp5g traffic by (TEID, QFI). One Classifier
// holds one set of BPF objects; Downlink and Uplink return the
// classify.Classifier views for the N3 and the N6 tree. It is safe for
// concurrent use: the two views share one lock.
type Classifier struct {
	mu   sync.Mutex
	opts Options
	objs *Objects
	att  map[attKey]Attachment
	// sdf are the sessions' SDF rules (SetSDF); ents the entries each
	// direction's maps hold, to give the rules their values.
	sdf  []shaper.SessionRules
	ents map[shaper.Direction]map[shaper.FlowID]classify.Entry
}

type attKey struct {
	index int
	hook  Hook
}

// New returns a Classifier for the N3 device opts.N3. Nothing is loaded or
// attached until the first Sync.
func New(opts Options) *Classifier {
	return &Classifier{opts: opts, att: map[attKey]Attachment{}, ents: map[shaper.Direction]map[shaper.FlowID]classify.Entry{}}
}

// Objects returns the loaded BPF objects (nil before the first Sync).
func (c *Classifier) Objects() *Objects {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.objs
}

// Close detaches every filter this Classifier attached (through h) and
// releases the BPF objects.
func (c *Classifier) Close(h *netlink.Handle) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for k, a := range c.att {
		if err := Detach(h, a); err != nil && first == nil {
			first = err
		}
		delete(c.att, k)
	}
	if err := c.objs.Close(); err != nil && first == nil {
		first = fmt.Errorf("gtpu bpf: close objects: %w", err)
	}
	c.objs = nil
	return first
}

// load loads the objects once, sized for the N3 device's link layer.
func (c *Classifier) load(n3 netlink.Link) (bool, error) {
	if c.objs != nil {
		return false, nil
	}
	opts := LoadOptions{}
	if n3.Attrs().EncapType == "none" {
		opts.L2Len = NoL2Header
	}
	o, err := Load(opts)
	if err != nil {
		return false, err
	}
	c.objs = o
	return true, nil
}

func (c *Classifier) n3Link(env classify.Env) (netlink.Link, error) {
	if c.opts.N3 == "" || c.opts.N3 == env.Link.Attrs().Name {
		return env.Link, nil
	}
	l, err := env.Handle.LinkByName(c.opts.N3)
	if err != nil {
		return nil, fmt.Errorf("gtpu classifier: N3 device %s: %w", c.opts.N3, err)
	}
	return l, nil
}

// attach attaches prog unless it is attached already, remembering whether
// we created the clsact qdisc.
func (c *Classifier) attach(env classify.Env, link netlink.Link, hook Hook, which string) (bool, error) {
	p := c.objs.DownlinkProgram()
	switch which {
	case "gtpu-ingress":
		p = c.objs.UplinkProgram()
	case "mark-egress":
		p = c.objs.MarkProgram()
	}
	a, wrote, err := Attach(env.Handle, link, hook, p, which)
	k := attKey{link.Attrs().Index, hook}
	if prev, ok := c.att[k]; ok {
		a.CreatedClsact = a.CreatedClsact || prev.CreatedClsact
	}
	if err != nil {
		return false, err
	}
	c.att[k] = a
	return wrote, nil
}

// attachNoting attaches the named program like attach and, when that
// wrote, counts the write and notes it in res.
func (c *Classifier) attachNoting(env classify.Env, link netlink.Link, hook Hook, which string, res *classify.Result) error {
	wrote, err := c.attach(env, link, hook, which)
	if err != nil {
		return err
	}
	if wrote {
		res.Writes++
		res.Notes = append(res.Notes, fmt.Sprintf("attached %s to dev %s clsact %s", strings.ReplaceAll(which, "-", "_"), link.Attrs().Name, hook))
	}
	return nil
}

// detach removes the named filter from the hook: the one this Classifier
// attached, or (in a process that attached nothing, e.g. 'gtpqos reset') one
// of ours left by an earlier run, then leaving its clsact qdisc in place.
func (c *Classifier) detach(env classify.Env, link netlink.Link, hook Hook, which string) error {
	k := attKey{link.Attrs().Index, hook}
	a, ok := c.att[k]
	if !ok {
		a = Attachment{LinkIndex: k.index, LinkName: link.Attrs().Name, Hook: hook, Name: NamePrefix + which}
	}
	if err := Detach(env.Handle, a); err != nil {
		return err
	}
	delete(c.att, k)
	return nil
}

// snapshot reads this Classifier's maps, or if it has loaded nothing yet,
// those of the gtpqos program attached to link's hook (nil if none). The
// programs are not pinned: another process's open by id only with
// CAP_SYS_ADMIN. Without it (a restarted daemon as its own user) the
// attached program reads as holding nothing, so the run loads its own,
// binds every flow again and replaces the filter.
func (c *Classifier) snapshot(env classify.Env, link netlink.Link, hook Hook) (*Snapshot, error) {
	if c.objs != nil {
		return c.objs.snapshot()
	}
	s, err := ReadAttached(env.Handle, link, hook)
	if errors.Is(err, os.ErrPermission) && !classify.HasCap(unix.CAP_SYS_ADMIN) {
		return nil, nil
	}
	return s, err
}

// keyOf returns the map key of a table entry, or a note saying why the
// flow cannot be keyed.
func (c *Classifier) keyOf(e classify.Entry) (Key, string) {
	if e.QFI > 63 {
		return Key{}, fmt.Sprintf("flow %s (class %s): QFI %d out of range; its packets go to the default class", e.Flow, classify.Handle(e.ClassID), e.QFI)
	}
	if c.opts.QFIOnly {
		return Key{QFI: e.QFI}, ""
	}
	if e.TEID == 0 {
		return Key{}, fmt.Sprintf("flow %s (class %s): no TEID known; its packets go to the default class", e.Flow, classify.Handle(e.ClassID))
	}
	return Key{TEID: e.TEID, QFI: e.QFI}, ""
}

// entries builds key -> value for the table's entries. Two flows with one
// key share the entry of the lower class id; each loser is noted.
func (c *Classifier) entries(table classify.Table, value func(classify.Entry) (uint32, bool)) (map[Key]uint32, []string) {
	want := map[Key]uint32{}
	owner := map[Key]classify.Entry{}
	var notes []string
	ents := slices.Clone(table.Entries)
	slices.SortFunc(ents, func(a, b classify.Entry) int { return cmp.Compare(a.ClassID, b.ClassID) })
	for _, e := range ents {
		k, note := c.keyOf(e)
		if note != "" {
			notes = append(notes, note)
			continue
		}
		v, ok := value(e)
		if !ok {
			continue
		}
		if o, dup := owner[k]; dup {
			notes = append(notes, fmt.Sprintf("flow %s (class %s) shares %s with flow %s (class %s): its packets go to class %s",
				e.Flow, classify.Handle(e.ClassID), k, o.Flow, classify.Handle(o.ClassID), classify.Handle(o.ClassID)))
			continue
		}
		owner[k] = e
		want[k] = v
	}
	return want, notes
}

func addSync(r *classify.Result, s SyncResult) {
	r.Added += s.Added
	r.Changed += s.Changed
	r.Deleted += s.Deleted
	r.Writes += s.Writes()
}

// minorOf returns the minor of classID if it belongs to the tree rooted at root.
func minorOf(classID, root uint32) (uint16, bool) {
	if classID>>16 != root>>16 {
		return 0, false
	}
	return uint16(classID), true
}

// missingTEID says "teid" when an entry has no TEID to key it by (unless
// keys are QFI only).
func (c *Classifier) missingTEID(e classify.Entry) string {
	if !c.opts.QFIOnly && e.TEID == 0 {
		return "teid"
	}
	return ""
}
