package gtpu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/internal/enum"
)

// Identity of the filters this package installs. A filter at FilterPriority
// that is not named NamePrefix+... is someone else's and makes Attach fail
// rather than replace it.
const (
	// FilterPriority is the tc filter priority (preference) on each hook.
	FilterPriority uint16 = 2152
	// FilterHandle is the filter's handle.
	FilterHandle uint32 = 1
	// NamePrefix starts the name of every filter this package installs.
	NamePrefix = "gtpqos-"
	// ClsactOwnedSuffix ends the name of a filter whose clsact qdisc gtpqos
	// added. It is how a later process (a restarted daemon, 'gtpqos reset')
	// knows the clsact is gtpqos's to remove once empty: a clsact that was
	// there before gtpqos stays.
	ClsactOwnedSuffix = "+clsact"
)

// BaseName returns a gtpqos filter's name without ClsactOwnedSuffix.
func BaseName(name string) string { return strings.TrimSuffix(name, ClsactOwnedSuffix) }

// Hook is a clsact attachment point.
type Hook uint8

const (
	// Egress is clsact egress (packets leaving the device).
	Egress Hook = iota + 1
	// Ingress is clsact ingress (packets arriving on the device).
	Ingress
)

var hooks = enum.Table[Hook]{What: "hook", Names: []enum.Name[Hook]{
	{Value: Egress, Name: "egress"},
	{Value: Ingress, Name: "ingress"},
}}

// String returns "egress" or "ingress" (hook(N) for another value).
func (h Hook) String() string { return hooks.String(h) }

func (h Hook) parent() uint32 {
	if h == Ingress {
		return netlink.HANDLE_MIN_INGRESS
	}
	return netlink.HANDLE_MIN_EGRESS
}

// Attachment is one program attached to one clsact hook, and whether this
// package created the clsact qdisc it hangs on.
type Attachment struct {
	// LinkIndex and LinkName name the device.
	LinkIndex int
	LinkName  string
	// Hook is the clsact hook.
	Hook Hook
	// Name is the filter's name (NamePrefix + program).
	Name string
	// ProgramID is the kernel id of the attached program.
	ProgramID uint32
	// CreatedClsact is true if Attach added the clsact qdisc.
	CreatedClsact bool
}

// Attach attaches prog as a direct-action cls_bpf filter named
// NamePrefix+name on link's clsact hook, adding the clsact qdisc if the
// device has none. It replaces a filter of ours left at FilterPriority (from
// an earlier run) and refuses to touch anyone else's. It is idempotent:
// wrote is false when the program was already attached.
func Attach(h *netlink.Handle, link netlink.Link, hook Hook, prog *ebpf.Program, name string) (a Attachment, wrote bool, err error) {
	attrs := link.Attrs()
	a = Attachment{LinkIndex: attrs.Index, LinkName: attrs.Name, Hook: hook, Name: NamePrefix + name}
	created, err := ensureClsact(h, link)
	if err != nil {
		return a, false, err
	}
	a.CreatedClsact = created
	defer func() {
		// Leave no empty clsact of ours behind when attaching failed.
		if err != nil && created {
			_ = h.QdiscDel(clsact(attrs.Index))
		}
	}()
	old, err := findFilter(h, link, hook)
	if err != nil {
		return a, created, err
	}
	if old != nil && !strings.HasPrefix(old.Name, NamePrefix) {
		return a, created, fmt.Errorf("dev %s: clsact %s priority %d holds filter %q that gtpqos does not own", attrs.Name, hook, FilterPriority, old.Name)
	}
	// Carry the clsact's ownership over from our filters already on it (an
	// earlier run's, or ours on the other hook).
	owned := created
	if !owned {
		if owned, err = clsactOwned(h, link); err != nil {
			return a, false, err
		}
	}
	if owned {
		a.CreatedClsact = true
		a.Name += ClsactOwnedSuffix
	}
	info, err := prog.Info()
	if err != nil {
		return a, created, fmt.Errorf("gtpu bpf: program %s: info: %w", name, err)
	}
	id, _ := info.ID()
	a.ProgramID = uint32(id)
	if old != nil && old.Name == a.Name && uint32(old.Id) == a.ProgramID {
		return a, created, nil
	}
	f := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: attrs.Index,
			Parent:    hook.parent(),
			Handle:    FilterHandle,
			Priority:  FilterPriority,
			Protocol:  unix.ETH_P_ALL,
		},
		Fd:           prog.FD(),
		Name:         a.Name,
		DirectAction: true,
	}
	if err := h.FilterReplace(f); err != nil {
		return a, created, fmt.Errorf("dev %s: attach %s to clsact %s: %w", attrs.Name, a.Name, hook, err)
	}
	return a, true, nil
}

// Detach removes the filter if it is still ours (names are compared without
// ClsactOwnedSuffix), then the clsact qdisc if gtpqos created it (a.CreatedClsact,
// or the suffix on the filter found) and no other filter hangs on it. A
// device that is gone is not an error.
func Detach(h *netlink.Handle, a Attachment) error {
	link, err := h.LinkByIndex(a.LinkIndex)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return nil
		}
		return fmt.Errorf("dev %s: %w", a.LinkName, err)
	}
	old, err := findFilter(h, link, a.Hook)
	if err != nil {
		return err
	}
	ownsClsact := a.CreatedClsact
	if old != nil && BaseName(old.Name) == BaseName(a.Name) {
		ownsClsact = ownsClsact || strings.HasSuffix(old.Name, ClsactOwnedSuffix)
		if err := h.FilterDel(old); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("dev %s: detach %s from clsact %s: %w", a.LinkName, BaseName(a.Name), a.Hook, err)
		}
	}
	if !ownsClsact {
		return nil
	}
	for _, hk := range []Hook{Egress, Ingress} {
		fs, err := h.FilterList(link, hk.parent())
		if err != nil {
			return fmt.Errorf("dev %s: list clsact %s filters: %w", a.LinkName, hk, err)
		}
		if len(fs) > 0 {
			return nil // still in use (by us on the other hook, or by others)
		}
	}
	q := clsact(link.Attrs().Index)
	if err := h.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("dev %s: delete clsact qdisc: %w", a.LinkName, err)
	}
	return nil
}

func clsact(index int) *netlink.GenericQdisc {
	return &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: index,
			Handle:    netlink.MakeHandle(0xffff, 0),
			Parent:    netlink.HANDLE_CLSACT,
		},
		QdiscType: "clsact",
	}
}

// ensureClsact adds a clsact qdisc unless the device has one; it reports
// whether it added it. An ingress qdisc (which holds the same slot) is an
// error naming the device.
func ensureClsact(h *netlink.Handle, link netlink.Link) (bool, error) {
	name := link.Attrs().Name
	qs, err := h.QdiscList(link)
	if err != nil {
		return false, fmt.Errorf("dev %s: list qdiscs: %w", name, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent != netlink.HANDLE_CLSACT {
			continue
		}
		if q.Type() == "clsact" {
			return false, nil
		}
		return false, fmt.Errorf("dev %s: has an %s qdisc where clsact goes; remove it or use the patched gtp5g's marks", name, q.Type())
	}
	if err := h.QdiscAdd(clsact(link.Attrs().Index)); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return false, nil
		}
		return false, fmt.Errorf("dev %s: add clsact qdisc: %w", name, err)
	}
	return true, nil
}

// clsactOwned reports whether a gtpqos filter on either clsact hook of link
// says gtpqos added the clsact qdisc (ClsactOwnedSuffix).
func clsactOwned(h *netlink.Handle, link netlink.Link) (bool, error) {
	for _, hk := range []Hook{Egress, Ingress} {
		f, err := findFilter(h, link, hk)
		if err != nil {
			return false, err
		}
		if f != nil && strings.HasPrefix(f.Name, NamePrefix) && strings.HasSuffix(f.Name, ClsactOwnedSuffix) {
			return true, nil
		}
	}
	return false, nil
}

// findFilter returns the cls_bpf filter at FilterPriority on the hook, or nil.
func findFilter(h *netlink.Handle, link netlink.Link, hook Hook) (*netlink.BpfFilter, error) {
	fs, err := h.FilterList(link, hook.parent())
	if err != nil {
		return nil, fmt.Errorf("dev %s: list clsact %s filters: %w", link.Attrs().Name, hook, err)
	}
	for _, f := range fs {
		if f.Attrs().Priority != FilterPriority {
			continue
		}
		if bf, ok := f.(*netlink.BpfFilter); ok {
			return bf, nil
		}
		return &netlink.BpfFilter{FilterAttrs: *f.Attrs(), Name: f.Type()}, nil
	}
	return nil, nil
}
