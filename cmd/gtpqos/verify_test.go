package main

import (
	"strings"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/htb"
)

func verifyTree(cls shaper.ClassifierKind, flows ...htb.Class) *htb.Tree {
	t := &htb.Tree{Major: htb.OwnedMajor, DefaultMinor: htb.DefaultMinor, Classifier: cls,
		Classes: []htb.Class{{Minor: 1, Role: shaper.RoleLink}, {Minor: 2, Parent: 1, Role: shaper.RoleDefault}}}
	t.Classes = append(t.Classes, flows...)
	return t
}

func stats(t *htb.Tree, pk map[uint16]uint64) map[uint32]htb.ClassStats {
	out := map[uint32]htb.ClassStats{}
	for m, n := range pk {
		out[t.ClassID(m)] = htb.ClassStats{Minor: m, Packets: n}
	}
	return out
}

func snap(filter string, miss uint64, dl map[gtpu.Key]uint32) *gtpu.Snapshot {
	s := &gtpu.Snapshot{Filter: filter, Downlink: dl, MarkClass: map[uint32]uint32{}}
	s.Stats.Downlink.Miss = miss
	return s
}

func TestVerifyCheck(t *testing.T) {
	a := htb.Class{Minor: 0x10, Parent: 1, Role: shaper.RoleFlow, TEID: 100, QFI: 2}
	b := htb.Class{Minor: 0x11, Parent: 1, Role: shaper.RoleFlow, TEID: 999, QFI: 3}
	fw := htb.Class{Minor: 0x10, Parent: 1, Role: shaper.RoleFlow, Mark: 2}
	bare := htb.Class{Minor: 0x12, Parent: 1, Role: shaper.RoleFlow}
	gtpTree := verifyTree(shaper.KindGTPU, a, b)
	entries := map[gtpu.Key]uint32{{TEID: 100, QFI: 2}: gtpTree.ClassID(0x10), {TEID: 999, QFI: 3}: gtpTree.ClassID(0x11)}
	for _, tc := range []struct {
		name       string
		v          verification
		want       []string // substrings, one per expected problem line
		wantInSumm string
	}{
		{
			name: "gtpu: all flows counting",
			v: verification{tree: gtpTree, before: stats(gtpTree, map[uint16]uint64{0x10: 5, 0x11: 5}),
				after: stats(gtpTree, map[uint16]uint64{0x10: 50, 0x11: 9, 2: 7}),
				gtp1:  snap(gtpu.FilterDownlink, 3, entries), gtp2: snap(gtpu.FilterDownlink, 3, entries)},
			wantInSumm: "2 flow classes, 2 counting, default class +7",
		},
		{
			name: "gtpu: idle flow while GTP-U misses grow",
			v: verification{tree: gtpTree, before: stats(gtpTree, map[uint16]uint64{0x10: 5, 0x11: 5}),
				after: stats(gtpTree, map[uint16]uint64{0x10: 50, 0x11: 5, 2: 40}),
				gtp1:  snap(gtpu.FilterDownlink, 3, entries), gtp2: snap(gtpu.FilterDownlink, 40, entries)},
			want: []string{"37 GTP-U packets in 2s matched no (TEID, QFI) entry", "class 6771:11 (teid=999 qfi=3) counted no packets"},
		},
		{
			name: "gtpu: idle flow, nothing unclassified: fine",
			v: verification{tree: gtpTree, before: stats(gtpTree, map[uint16]uint64{0x10: 5}),
				after: stats(gtpTree, map[uint16]uint64{0x10: 50, 2: 40}),
				gtp1:  snap(gtpu.FilterDownlink, 3, entries), gtp2: snap(gtpu.FilterDownlink, 3, entries)},
			wantInSumm: "2 flow classes, 1 counting",
		},
		{
			name: "gtpu: entry pointing at a missing class",
			v: verification{tree: gtpTree, before: stats(gtpTree, nil), after: stats(gtpTree, map[uint16]uint64{0x10: 1, 0x11: 1}),
				gtp1: snap(gtpu.FilterDownlink, 0, nil),
				gtp2: snap(gtpu.FilterDownlink, 0, map[gtpu.Key]uint32{{TEID: 7, QFI: 1}: gtpTree.ClassID(0x30)})},
			want: []string{"gtpu entry teid=7 qfi=1 points at class 6771:30, which does not exist"},
		},
		{
			name: "gtpu on N6 (mark_egress): the default class is the signal",
			v: verification{tree: verifyTree(shaper.KindGTPU, fw), before: stats(gtpTree, nil),
				after: stats(gtpTree, map[uint16]uint64{2: 9}),
				gtp1:  snap(gtpu.FilterUplinkN6, 0, nil), gtp2: snap(gtpu.FilterUplinkN6, 0, nil)},
			want: []string{"class 6771:10 (mark=0x2) counted no packets in 2s while the default class 6771:2 counted 9 packets"},
		},
		{
			name: "fw: idle flow while the default class grows",
			v: verification{tree: verifyTree(shaper.KindFw, fw), before: stats(gtpTree, nil),
				after: stats(gtpTree, map[uint16]uint64{2: 100})},
			want: []string{"class 6771:10 (mark=0x2) counted no packets in 2s while the default class 6771:2 counted 100 packets"},
		},
		{
			name: "flow class no entry points at",
			v: verification{tree: verifyTree(shaper.KindFw, fw, bare), before: stats(gtpTree, nil),
				after: stats(gtpTree, map[uint16]uint64{0x10: 3})},
			want: []string{"class 6771:12: no fw classifier entry points at it"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.v.dev, tc.v.interval = "n3", 2*time.Second
			probs, summ := tc.v.check()
			if len(probs) != len(tc.want) {
				t.Fatalf("problems %q, want %d matching %q", probs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(probs[i], w) || !strings.HasPrefix(probs[i], "dev n3: ") || strings.Contains(probs[i], "\n") {
					t.Errorf("problem %d %q: want one line 'dev n3: ...' containing %q", i, probs[i], w)
				}
			}
			if !strings.Contains(summ, tc.wantInSumm) {
				t.Errorf("summary %q: want it to contain %q", summ, tc.wantInSumm)
			}
		})
	}
}
