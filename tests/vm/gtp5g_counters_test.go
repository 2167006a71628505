package vm

import (
	"sort"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// markCounters observes which skb->mark the packets leaving one device
// carry: an HTB root with one class per expected mark, steered by cls_fw
// filters on the mark field (mask 0x00FFFFFF, as gtp5g-patch/ABI.md lays
// it out), and a default class for everything else. Rates are far above
// what TCG pushes, so nothing is shaped; the class packet counters are
// the observation.
type markCounters struct {
	h     *netlink.Handle
	link  netlink.Link
	root  netlink.Qdisc
	minor map[uint32]uint16 // mark -> class minor
}

const (
	markFieldMask  = 0x00FFFFFF
	defaultMinor   = 0xfff
	counterRateBps = 1_000_000_000
)

// newMarkCounters installs the counting tree on dev (in the guest's root
// namespace) for the given marks and removes it when the test ends.
func newMarkCounters(t *testing.T, dev string, marks []uint32) *markCounters {
	t.Helper()
	return newMarkCountersMask(t, dev, marks, markFieldMask)
}

// newMarkCountersMask is newMarkCounters with the fw filters' mask: with
// 0xFFFFFFFF a class counts packets whose whole skb->mark is its mark.
func newMarkCountersMask(t *testing.T, dev string, marks []uint32, mask uint32) *markCounters {
	t.Helper()
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatalf("link %s: %v", dev, err)
	}
	idx := link.Attrs().Index
	root := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT})
	root.Defcls = defaultMinor
	m := &markCounters{h: h, link: link, root: root, minor: map[uint32]uint16{}}
	if err := h.QdiscReplace(root); err != nil {
		t.Fatalf("%s: htb root: %v", dev, err)
	}
	t.Cleanup(func() { _ = h.QdiscDel(root) })
	addClass := func(minor uint16) {
		c := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: idx, Parent: netlink.MakeHandle(1, 0), Handle: netlink.MakeHandle(1, minor)},
			netlink.HtbClassAttrs{Rate: counterRateBps, Ceil: counterRateBps})
		if err := h.ClassReplace(c); err != nil {
			t.Fatalf("%s: class 1:%x: %v", dev, minor, err)
		}
	}
	addClass(defaultMinor)
	for i, mark := range uniqueMarks(marks) {
		minor := uint16(0x100 + i)
		m.minor[mark] = minor
		addClass(minor)
		f := &netlink.FwFilter{
			FilterAttrs: netlink.FilterAttrs{LinkIndex: idx, Parent: netlink.MakeHandle(1, 0), Priority: 1,
				Protocol: unix.ETH_P_IP, Handle: mark},
			ClassId: netlink.MakeHandle(1, minor),
			Mask:    mask,
		}
		if err := h.FilterAdd(f); err != nil {
			t.Fatalf("%s: fw filter mark %#x -> 1:%x: %v", dev, mark, minor, err)
		}
	}
	return m
}

// uniqueMarks returns the non-zero marks, sorted, without duplicates.
func uniqueMarks(marks []uint32) []uint32 {
	seen := map[uint32]bool{}
	var out []uint32
	for _, m := range marks {
		if m != 0 && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// remove deletes the counting tree (before the test ends, to count again).
func (m *markCounters) remove() { _ = m.h.QdiscDel(m.root) }

// packets returns the packets each mark's class sent (key 0: the default
// class).
func (m *markCounters) packets(t *testing.T) map[uint32]uint64 {
	t.Helper()
	classes, err := m.h.ClassList(m.link, netlink.MakeHandle(1, 0))
	if err != nil {
		t.Fatalf("%s: list classes: %v", m.link.Attrs().Name, err)
	}
	byMinor := map[uint16]uint64{}
	for _, c := range classes {
		a := c.Attrs()
		if a.Statistics == nil || a.Statistics.Basic == nil {
			t.Fatalf("%s: class %s has no statistics", m.link.Attrs().Name, netlink.HandleStr(a.Handle))
		}
		byMinor[uint16(a.Handle&0xffff)] = uint64(a.Statistics.Basic.Packets)
	}
	out := map[uint32]uint64{0: byMinor[defaultMinor]}
	for mark, minor := range m.minor {
		out[mark] = byMinor[minor]
	}
	return out
}
