package gtpnl

import (
	"testing"

	"github.com/mdlayher/genetlink"
)

// Fuzz targets, one per decoder: no input may panic, and a decoded value
// must be self-consistent. Seeds are messages shaped like gtp5g's (stock
// and patched) replies; crashers found are kept under testdata/fuzz.

func FuzzParseQER(f *testing.F) {
	f.Add(kqer{id: 1, seid: 1, mbrUL: 200000, mbrDL: 100000, qfi: 1, pdrIDs: []uint16{1, 2}}.attrs(f))
	f.Add(kqer{id: 3, gbrDL: 15000, mbrDL: 18000, qfi: 2}.attrs(f))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		qers, err := parseQERs([]genetlink.Message{{Data: b}})
		if err == nil && len(qers) != 1 {
			t.Fatalf("no error but %d QERs", len(qers))
		}
		if err == nil && qers[0].MBR.Uplink > (1<<40-1)*1000 {
			t.Fatalf("MBR %d beyond 40-bit kbit/s", qers[0].MBR.Uplink)
		}
	})
}

func FuzzParsePDR(f *testing.F) {
	f.Add(kpdr{id: 3, precedence: 128, seid: 1, ohr: u8p(0), farID: 3, qerIDs: []uint32{3}, teid: 200, gtpuAddr: "10.100.0.1"}.attrs(f))
	f.Add(kpdr{id: 8, farID: 8, qerIDs: []uint32{1, 5}, ueAddr: "10.60.0.1", srcIntf: u8p(1),
		sdf: &ksdf{action: 1, dir: 2, proto: 0xff, src: "192.168.100.5", dst: "10.60.0.1", smask: "255.255.255.0", dports: []uint32{5203 | 5203<<16}}}.attrs(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		pdrs, err := parsePDRs([]genetlink.Message{{Data: b}})
		if err == nil && len(pdrs) != 1 {
			t.Fatalf("no error but %d PDRs", len(pdrs))
		}
	})
}

func FuzzParseFAR(f *testing.F) {
	f.Add(kfar{id: 8, seid: 1, action: 2, fwd: true, ohc: true, desc: 0x100, teid: 100, peer: "10.100.0.2", port: 2152, pdrIDs: []uint16{8}}.attrs(f))
	f.Add(kfar{id: 3, action: 2, u16Action: true, fwd: true, policy: "p"}.attrs(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		fars, err := parseFARs([]genetlink.Message{{Data: b}})
		if err == nil && len(fars) != 1 {
			t.Fatalf("no error but %d FARs", len(fars))
		}
	})
}

func FuzzParseVersion(f *testing.F) {
	f.Add([]byte{0x0b, 0x00, 0x00, 0x00, '0', '.', '1', '0', '.', '2', 0x00, 0x00})
	f.Add([]byte{0x0b, 0x00, 0x00, 0x00, '0', '.', '1', '0', '.', '2', 0x00, 0x00, 0x08, 0x00, 0x01, 0x00, 0x0f, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseVersion([]genetlink.Message{{Data: b}})
		if err == nil && v == "" {
			t.Fatal("no error but empty version")
		}
	})
}

func FuzzParseEvent(f *testing.F) {
	f.Add(qerEvent(f, 1, 1, kqer{id: 3, qfi: 2}, 5).Data)
	f.Add(pdrEvent(f, 2, 2, kpdr{id: 4, farID: 4, qerIDs: []uint32{3}}, 2, 5).Data)
	f.Add(farEvent(f, 3, 3, kfar{id: 4, action: 2}).Data)
	f.Add(droppedEvent(f, 4, qosAttrQERID, 1, 3).Data)
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := parseEvents([]genetlink.Message{{Header: genetlink.Header{Command: qosCmdEvent}, Data: b}})
		if err != nil {
			return
		}
		if len(evs) != 1 {
			t.Fatalf("no error but %d events", len(evs))
		}
		ev := evs[0]
		n := 0
		for _, set := range []bool{ev.QER != nil, ev.PDR != nil, ev.FAR != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("event with %d rule objects", n)
		}
		if ev.IDsOnly && ev.Op != EventDelete {
			t.Fatalf("%s event without the rule's state", ev.Op)
		}
		_ = ev.String()
	})
}

func FuzzParseKnobs(f *testing.F) {
	f.Add([]byte{0x05, 0x00, 0x03, 0x00, 0x02, 0x00, 0x00, 0x00, 0x08, 0x00, 0x04, 0x00, 0xff, 0xff, 0xff, 0x00, 0x05, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00})
	f.Add([]byte{0x05, 0x00, 0x06, 0x00, 0x01, 0x00, 0x00, 0x00})
	f.Add([]byte{0x08, 0x00, 0x02, 0x00, 0x0f, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		if l, err := parseMarkLayout([]genetlink.Message{{Data: b}}); err == nil {
			_ = l.Value(0xffffffff)
			_ = l.Mode.String()
		}
		_, _ = parsePolicer([]genetlink.Message{{Data: b}})
		if f, err := parseFeatures([]genetlink.Message{{Data: b}}); err == nil {
			_ = f.String()
		}
	})
}

func FuzzParseMarkRecords(f *testing.F) {
	f.Add(pdrRecord(f, 7, 1, 3, 2, 5))
	f.Add(qerRecord(f, 7, 1, 3, 0xabcdef))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, idAttr := range []uint16{qosAttrPDRID, qosAttrQERID} {
			recs, err := parseMarkRecords("records", idAttr, []genetlink.Message{{Data: b}})
			if err == nil && len(recs) != 1 {
				t.Fatalf("no error but %d records", len(recs))
			}
		}
	})
}
