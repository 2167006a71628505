package vm

import (
	"fmt"
	"testing"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// dumpKey names a rule the way gtp5g does: by session and id.
type dumpKey struct {
	seid uint64
	id   uint32
}

// dumpCounts checks a GET dump's rules: each of the sessions' rule 1
// exactly once.
func dumpCounts(t *testing.T, what string, sessions int, keys []dumpKey) {
	t.Helper()
	seen := make(map[dumpKey]int, len(keys))
	for _, k := range keys {
		seen[k]++
	}
	var repeated, missing int
	var example string
	for s := 1; s <= sessions; s++ {
		switch n := seen[dumpKey{uint64(s), 1}]; {
		case n == 0:
			missing++
			if example == "" {
				example = fmt.Sprintf("session %d's is missing", s)
			}
		case n > 1:
			repeated++
			if example == "" {
				example = fmt.Sprintf("session %d's comes %d times", s, n)
			}
		}
	}
	if repeated > 0 || missing > 0 || len(keys) != sessions {
		t.Errorf("GET_%s dump of %d sessions' %s 1: %d rules, %d repeated, %d missing (%s)",
			what, sessions, what, len(keys), repeated, missing, example)
		return
	}
	t.Logf("GET_%s dump: %d sessions' %s 1, each once", what, sessions, what)
}

// TestGtp5gSeriesDumpResume: a GET_PDR, FAR or QER dump that takes several
// messages lists every rule once when sessions share rule ids, as
// free5GC's do (every session numbers its rules from 1). The series
// resumed a dump at the first rule of the bucket with the id where the
// last message stopped, another session's as likely as not, and sent
// rules again (or, had that rule gone, none of the rest).
func TestGtp5gSeriesDumpResume(t *testing.T) {
	requireSeriesFixes(t)
	const sessions = 3000 // 1024 buckets, and several 32 KiB messages per dump
	ns := gtp5gtest.In("gtpd1", testenv.NewNetNS(t))
	ns.AddLink(t, "gtpd1", gtp5gtest.RoleUPF)
	r := ns.DialRules(t, "gtpd1")
	for s := uint64(1); s <= sessions; s++ {
		r.AddFAR(t, s, 1, gtp5gtest.FARForward(0, ""))
		r.AddQER(t, s, 1, gtp5gtest.QER{QFI: 9})
		r.AddPDR(t, s, 1, gtp5gtest.PDR{Precedence: 10, SrcIntf: gtp5gtest.SrcAccess, FTEID: uint32(s),
			FTEIDAddr: "127.0.0.1", FARID: 1, QERIDs: []uint32{1}})
	}
	seid := func(p *uint64) uint64 {
		if p == nil {
			return 0
		}
		return *p
	}
	pdrs, err := gtp5gnl.GetPDRAll(r.Client())
	if err != nil {
		t.Fatalf("GET_PDR dump: %v", err)
	}
	var keys []dumpKey
	for _, p := range pdrs {
		keys = append(keys, dumpKey{seid(p.SEID), uint32(p.ID)})
	}
	dumpCounts(t, "PDR", sessions, keys)
	fars, err := gtp5gnl.GetFARAll(r.Client())
	if err != nil {
		t.Fatalf("GET_FAR dump: %v", err)
	}
	keys = keys[:0]
	for _, f := range fars {
		keys = append(keys, dumpKey{seid(f.SEID), f.ID})
	}
	dumpCounts(t, "FAR", sessions, keys)
	qers, err := gtp5gnl.GetQERAll(r.Client())
	if err != nil {
		t.Fatalf("GET_QER dump: %v", err)
	}
	keys = keys[:0]
	for _, q := range qers {
		keys = append(keys, dumpKey{seid(q.SEID), q.ID})
	}
	dumpCounts(t, "QER", sessions, keys)
}
