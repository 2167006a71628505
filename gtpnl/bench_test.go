package gtpnl

import (
	"testing"

	"github.com/mdlayher/genetlink"
)

// BenchmarkParseDump decodes a dump of 10k free5GC-shaped sessions' QERs
// (5 each) and PDRs (8 each), as gtp5g sends them, and dedupes them.
func BenchmarkParseDump(b *testing.B) {
	var qmsgs, pmsgs []genetlink.Message
	for s := uint64(1); s <= 10000; s++ {
		for id := uint32(1); id <= 5; id++ {
			qmsgs = append(qmsgs, reply(cmdGetQER, kqer{id: id, seid: s, gbrDL: 15000, mbrDL: 18000, qfi: uint8(id), pdrIDs: []uint16{1, 2}}.attrs(b)))
		}
		for id := uint16(1); id <= 8; id++ {
			pmsgs = append(pmsgs, reply(cmdGetPDR, kpdr{id: id, seid: s, precedence: 128, farID: uint32(id), qerIDs: []uint32{1, 5}, ueAddr: "10.60.0.1"}.attrs(b)))
		}
	}
	b.ResetTimer()
	for b.Loop() {
		qers, err := parseQERs(qmsgs)
		if err != nil {
			b.Fatal(err)
		}
		pdrs, err := parsePDRs(pmsgs)
		if err != nil {
			b.Fatal(err)
		}
		if len(dedupe(qers, qerKey)) != 50000 || len(dedupe(pdrs, pdrKey)) != 80000 {
			b.Fatal("lost rules")
		}
	}
}
