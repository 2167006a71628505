package shaper_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
)

// root is the class id of the gtpqos tree's root (6771:0).
const root = 0x67710000

// class is a class of the test tree: its minor and, for a flow class, the
// key that binds it.
type class struct {
	minor uint16
	role  shaper.Role
	key   shaper.Key
}

func flowClass(minor uint16, k shaper.Key) class { return class{minor, shaper.RoleFlow, k} }

// inspection is a device as a backend's Inspect reads it: a link class
// 6771:1, the default class 6771:2 and the flow classes, each with the
// packets pk gives its minor, and, when snap is set, the GTP-U program's
// unplaced packets and dangling entries, taken from the snapshot as the
// HTB backend takes them.
func inspection(cls classify.Kind, snap *gtpu.Snapshot, pk map[uint16]uint64, flows ...class) *shaper.Inspection {
	in := &shaper.Inspection{Dev: "n3", Backend: "htb", Owned: true, Root: "6771:", Classifier: string(cls), Default: "6771:2"}
	ids := map[uint32]bool{}
	for _, c := range append([]class{{1, shaper.RoleLink, shaper.Key{}}, {2, shaper.RoleDefault, shaper.Key{}}}, flows...) {
		cs := shaper.ClassState{Handle: fmt.Sprintf("6771:%x", c.minor), Role: c.role, Key: c.key}
		if c.minor != 1 {
			cs.Parent = "6771:1"
		}
		cs.Counters.Packets = pk[c.minor]
		in.Classes = append(in.Classes, cs)
		ids[root|uint32(c.minor)] = true
	}
	if snap != nil {
		in.Unplaced = snap.Unplaced()
		in.Problems = snap.Dangling(in.Dev, root, ids)
	}
	return in
}

// snap is a GTP-U program's snapshot with its downlink miss counter.
func snap(filter string, miss uint64, dl map[gtpu.Key]uint32) *gtpu.Snapshot {
	s := &gtpu.Snapshot{Filter: filter, Downlink: dl, MarkClass: map[uint32]uint32{}}
	s.Stats.Downlink.Miss = miss
	return s
}

func TestVerify(t *testing.T) {
	a := flowClass(0x10, shaper.Key{TEID: 100, QFI: 2})
	b := flowClass(0x11, shaper.Key{TEID: 999, QFI: 3})
	fw := flowClass(0x10, shaper.Key{Mark: 2})
	bare := flowClass(0x12, shaper.Key{})
	entries := map[gtpu.Key]uint32{{TEID: 100, QFI: 2}: root | 0x10, {TEID: 999, QFI: 3}: root | 0x11}
	gtp := classify.KindGTPU
	for _, tc := range []struct {
		name          string
		before, after *shaper.Inspection
		want          []string // substrings, one per expected problem line
		wantInSumm    string
	}{
		{
			name:       "gtpu: all flows counting",
			before:     inspection(gtp, snap(gtpu.FilterDownlink, 3, entries), map[uint16]uint64{0x10: 5, 0x11: 5}, a, b),
			after:      inspection(gtp, snap(gtpu.FilterDownlink, 3, entries), map[uint16]uint64{0x10: 50, 0x11: 9, 2: 7}, a, b),
			wantInSumm: "2 flow classes, 2 counting, default class +7",
		},
		{
			name:   "gtpu: idle flow while GTP-U misses grow",
			before: inspection(gtp, snap(gtpu.FilterDownlink, 3, entries), map[uint16]uint64{0x10: 5, 0x11: 5}, a, b),
			after:  inspection(gtp, snap(gtpu.FilterDownlink, 40, entries), map[uint16]uint64{0x10: 50, 0x11: 5, 2: 40}, a, b),
			want: []string{"37 packets in 2s matched no gtpu classifier entry and went to the default class 6771:2",
				"class 6771:11 (teid=999 qfi=3) counted no packets in 2s while 37 packets matched no classifier entry"},
		},
		{
			name:       "gtpu: idle flow, nothing unclassified: fine",
			before:     inspection(gtp, snap(gtpu.FilterDownlink, 3, entries), map[uint16]uint64{0x10: 5}, a, b),
			after:      inspection(gtp, snap(gtpu.FilterDownlink, 3, entries), map[uint16]uint64{0x10: 50, 2: 40}, a, b),
			wantInSumm: "2 flow classes, 1 counting",
		},
		{
			name:   "gtpu: entry pointing at a missing class",
			before: inspection(gtp, snap(gtpu.FilterDownlink, 0, nil), nil, a, b),
			after: inspection(gtp, snap(gtpu.FilterDownlink, 0, map[gtpu.Key]uint32{{TEID: 7, QFI: 1}: root | 0x30}),
				map[uint16]uint64{0x10: 1, 0x11: 1}, a, b),
			want: []string{"gtpu entry teid=7 qfi=1 points at class 6771:30, which does not exist"},
		},
		{
			name:   "gtpu on N6 (mark_egress): the default class is the signal",
			before: inspection(gtp, snap(gtpu.FilterUplinkN6, 0, nil), nil, fw),
			after:  inspection(gtp, snap(gtpu.FilterUplinkN6, 0, nil), map[uint16]uint64{2: 9}, fw),
			want:   []string{"class 6771:10 (mark=0x2) counted no packets in 2s while the default class 6771:2 counted 9 packets"},
		},
		{
			name:   "fw: idle flow while the default class grows",
			before: inspection(classify.KindFw, nil, nil, fw),
			after:  inspection(classify.KindFw, nil, map[uint16]uint64{2: 100}, fw),
			want:   []string{"class 6771:10 (mark=0x2) counted no packets in 2s while the default class 6771:2 counted 100 packets"},
		},
		{
			name:   "flow class no entry points at",
			before: inspection(classify.KindFw, nil, nil, fw, bare),
			after:  inspection(classify.KindFw, nil, map[uint16]uint64{0x10: 3}, fw, bare),
			want:   []string{"class 6771:12: no fw classifier entry points at it"},
		},
		{
			// A classifier removed behind gtpqos's back used to pass.
			name:   "no classifier at all",
			before: inspection("", nil, nil, bare),
			after:  inspection("", nil, map[uint16]uint64{2: 9}, bare),
			want:   []string{"no classifier is installed: none of its 1 flow classes can be reached"},
		},
		{
			name:       "counter went backwards (class re-created): not counting, no problem",
			before:     inspection(classify.KindFw, nil, map[uint16]uint64{0x10: 50}, fw),
			after:      inspection(classify.KindFw, nil, map[uint16]uint64{0x10: 3}, fw),
			wantInSumm: "1 flow classes, 0 counting, default class +0 packets in 2s (classifier fw;",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probs, summ := shaper.Verify(tc.before, tc.after, 2*time.Second)
			if len(probs) != len(tc.want) {
				t.Fatalf("problems %q, want %d matching %q", probs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(probs[i], w) || !strings.HasPrefix(probs[i], "dev n3: ") || strings.Contains(probs[i], "\n") {
					t.Errorf("problem %d %q: want one line 'dev n3: ...' containing %q", i, probs[i], w)
				}
			}
			if !strings.HasPrefix(summ, "dev n3: ") || !strings.Contains(summ, tc.wantInSumm) {
				t.Errorf("summary %q: want 'dev n3: ...' containing %q", summ, tc.wantInSumm)
			}
		})
	}
}
