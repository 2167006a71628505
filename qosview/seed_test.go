package qosview

import (
	"net/netip"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
)

// The seed experiment's PDU session as free5GC installs it (SMF
// internal/context/datapath.go ActivateTunnelAndPDR + AddQoS, go-upf
// forwarder/gtp5g.go), and as gtp5g dumps it:
//
//   - QER 1: session AMBR (QFI = default QFI 1, MBR UL 200 / DL 100 Mbit/s)
//   - QER 2: default QER (QFI 1, gate only, no rates)
//   - QER 3/4/5: flows A, B, C (QFI 2/3/4; downlink contracts 15/18, 5/6,
//     -/30 Mbit/s; the seed tested downlink only, so no uplink rates)
//   - PDRs 1/2: default path UL/DL, QERs [2, 1]
//   - PDRs 3/4, 5/6: flows A, B (GBR) UL/DL, QER [own]
//   - PDRs 7/8: flow C (non-GBR) UL/DL, QERs [1, 5] (AMBR appended by
//     ActivateTunnelAndPDR before AddQoS appends the flow QER)
//   - FARs: uplink forward to core; downlink forward with outer header
//     creation TEID 100 toward the gNB 10.100.0.2:2152.
//
// Stock gtp5g v0.10.2 leaves PDI source interface, PDR QFI and flow marks
// out of its dumps; patched adds them.

const (
	mbit     = 1_000_000
	seedSEID = 1
)

type session struct {
	seid      uint64
	ue        string
	ulTEID    uint32 // our F-TEID (uplink)
	dlTEID    uint32 // gNB's TEID (downlink FAR)
	defQFI    uint8
	markBase  uint32 // patched: flow marks markBase+qerID
	patched   bool
	ulRates   bool // give the flow QERs uplink rates too
	qerOffset uint32
}

func (s session) build() ([]gtp5g.QER, []gtp5g.PDR, []gtp5g.FAR) {
	ue := netip.MustParseAddr(s.ue)
	n3 := netip.MustParseAddr("10.100.0.1")
	gnb := netip.MustParseAddr("10.100.0.2")
	mark := func(id uint32) uint32 {
		if s.patched {
			return s.markBase + id
		}
		return 0
	}
	ul := func(v uint64) uint64 {
		if s.ulRates {
			return v
		}
		return 0
	}
	qers := []gtp5g.QER{
		{SEID: s.seid, ID: 1, QFI: s.defQFI, MBR: gtp5g.Bitrate{Uplink: 200 * mbit, Downlink: 100 * mbit}, RelatedPDRs: []uint16{1, 2, 7, 8}, FlowMark: mark(1)},
		{SEID: s.seid, ID: 2, QFI: s.defQFI, RelatedPDRs: []uint16{1, 2}, FlowMark: mark(2)},
		{SEID: s.seid, ID: 3, QFI: 2, GBR: gtp5g.Bitrate{Uplink: ul(15 * mbit), Downlink: 15 * mbit}, MBR: gtp5g.Bitrate{Uplink: ul(18 * mbit), Downlink: 18 * mbit}, RelatedPDRs: []uint16{3, 4}, FlowMark: mark(3)},
		{SEID: s.seid, ID: 4, QFI: 3, GBR: gtp5g.Bitrate{Uplink: ul(5 * mbit), Downlink: 5 * mbit}, MBR: gtp5g.Bitrate{Uplink: ul(6 * mbit), Downlink: 6 * mbit}, RelatedPDRs: []uint16{5, 6}, FlowMark: mark(4)},
		{SEID: s.seid, ID: 5, QFI: 4, MBR: gtp5g.Bitrate{Uplink: ul(30 * mbit), Downlink: 30 * mbit}, RelatedPDRs: []uint16{7, 8}, FlowMark: mark(5)},
	}
	zero := uint8(0)
	access, core := gtp5g.InterfaceAccess, gtp5g.InterfaceCore
	srcIntf := func(i *gtp5g.Interface) *gtp5g.Interface {
		if s.patched {
			return i
		}
		return nil
	}
	sdf := func(dn string) *gtp5g.SDFFilter {
		return &gtp5g.SDFFilter{Rule: &gtp5g.FlowDescription{Action: 1, Direction: 2, Protocol: 0xff,
			Src: netip.MustParseAddr(dn), Dst: ue}}
	}
	up := func(id uint16, prec uint32, qerIDs []uint32, dn string) gtp5g.PDR {
		p := gtp5g.PDR{SEID: s.seid, ID: id, Precedence: prec, FARID: uint32(id), QERIDs: qerIDs, OuterHeaderRemoval: &zero,
			PDI: gtp5g.PDI{SourceInterface: srcIntf(&access), UEAddr: ue, FTEID: &gtp5g.FTEID{TEID: s.ulTEID, Addr: n3}}}
		if dn != "" {
			p.PDI.SDF = sdf(dn)
		}
		return p
	}
	down := func(id uint16, prec uint32, qerIDs []uint32, dn string) gtp5g.PDR {
		p := gtp5g.PDR{SEID: s.seid, ID: id, Precedence: prec, FARID: uint32(id), QERIDs: qerIDs,
			PDI: gtp5g.PDI{SourceInterface: srcIntf(&core), UEAddr: ue}}
		if dn != "" {
			p.PDI.SDF = sdf(dn)
		}
		return p
	}
	pdrs := []gtp5g.PDR{
		up(1, 255, []uint32{2, 1}, ""), down(2, 255, []uint32{2, 1}, ""),
		up(3, 128, []uint32{3}, "192.168.100.2"), down(4, 128, []uint32{3}, "192.168.100.2"),
		up(5, 128, []uint32{4}, "192.168.100.4"), down(6, 128, []uint32{4}, "192.168.100.4"),
		up(7, 128, []uint32{1, 5}, "192.168.100.5"), down(8, 128, []uint32{1, 5}, "192.168.100.5"),
	}
	if s.patched {
		// What the patch reports: the QFI and flow mark of the first QER
		// with a QFI (gtp5g's set_pdr_qfi).
		for i := range pdrs {
			first := pdrs[i].QERIDs[0]
			pdrs[i].QFI = qers[first-1].QFI
			pdrs[i].FlowMark = mark(first)
		}
	}
	var fars []gtp5g.FAR
	for id := uint32(1); id <= 8; id++ {
		f := gtp5g.FAR{SEID: s.seid, ID: id, ApplyAction: gtp5g.ActionForw, RelatedPDRs: []uint16{uint16(id)}, Forwarding: &gtp5g.ForwardingParameters{}}
		if id%2 == 0 { // downlink
			f.Forwarding.OuterHeaderCreation = &gtp5g.OuterHeaderCreation{Description: 0x100, TEID: s.dlTEID, Peer: gnb, Port: 2152}
		}
		fars = append(fars, f)
	}
	return qers, pdrs, fars
}

func seedSession() session {
	return session{seid: seedSEID, ue: "10.60.0.1", ulTEID: 200, dlTEID: 100, defQFI: 1}
}
