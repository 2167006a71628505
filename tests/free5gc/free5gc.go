// Package free5gc holds the rule sets free5GC's SMF installs in gtp5g
// through go-upf, as gtp5g dumps them, for qosview, watch and VM tests.
//
// Shapes follow free5gc/smf internal/context/datapath.go:
// ActivateTunnelAndPDR makes per data path one uplink and one downlink PDR,
// each with its own FAR, appends the default QER (default path only) and
// then the session-AMBR QER (every path that is not a GBR flow); AddQoS
// then appends the flow's own QER (QFI, GBR+MBR for a GBR 5QI, MBR for a
// non-GBR one); addUrrToPath puts the session's two URRs on every PDR.
// Rule ids come from per-UPF generators, so a second session's ids follow
// the first's. internal/pfcp/message/build.go sends every QER with a QFI
// IE; the AMBR QER's QFI is a parameter (AMBRQFI): gtp5g writes the QFI of
// a PDR's first QER with a QFI, so with it set, free5GC's non-GBR flows go
// out with the default QFI.
package free5gc

import (
	"net/netip"
	"slices"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
)

// Mbit is one megabit per second.
const Mbit = 1_000_000

// Flow is one QoS flow of a session (a PCC rule's data path).
type Flow struct {
	Name    string
	QFI     uint8
	GBR     uint64 // both directions; 0: non-GBR
	MBR     uint64 // both directions
	DN      string // the SDF's remote address
	QER     uint32
	PDRs    [2]uint16 // uplink, downlink
	removed bool
}

// Session is one PDU session on the UPF.
type Session struct {
	SEID    uint64
	UE      string
	ULTEID  uint32 // the UPF's F-TEID
	GNBTEID uint32 // the gNB's TEID (downlink FAR), known after the N2 update
	AMBR    uint64 // session AMBR, both directions
	AMBRQFI uint8
	// AMBRQER and DefaultQER are the session-level QERs; DefaultPDRs the
	// default path's uplink and downlink PDRs.
	AMBRQER, DefaultQER uint32
	DefaultPDRs         [2]uint16
	URRs                []uint32
	Flows               []*Flow
	// N2 says the N2 update happened: the downlink FARs create the outer
	// header toward the gNB.
	N2 bool
}

// UPF hands out rule ids the way the SMF's per-UPF generators do.
type UPF struct{ pdr, qer, urr uint32 }

func (u *UPF) nextPDR() uint16 { u.pdr++; return uint16(u.pdr) }
func (u *UPF) nextQER() uint32 { u.qer++; return u.qer }
func (u *UPF) nextURR() uint32 { u.urr++; return u.urr }

// Establish is the PFCP session establishment: the default path, then one
// data path per flow, in order.
func (u *UPF) Establish(seid uint64, ue string, ulTEID, gnbTEID uint32, ambr uint64, flows ...Flow) *Session {
	s := &Session{SEID: seid, UE: ue, ULTEID: ulTEID, GNBTEID: gnbTEID, AMBR: ambr, AMBRQFI: 1}
	s.DefaultPDRs = [2]uint16{u.nextPDR(), u.nextPDR()}
	s.URRs = []uint32{u.nextURR(), u.nextURR()}
	s.AMBRQER, s.DefaultQER = u.nextQER(), u.nextQER()
	for _, f := range flows {
		u.AddFlow(s, f)
	}
	return s
}

// AddFlow is a PFCP session modification adding a flow's data path.
func (u *UPF) AddFlow(s *Session, f Flow) *Flow {
	f.PDRs = [2]uint16{u.nextPDR(), u.nextPDR()}
	f.QER = u.nextQER()
	s.Flows = append(s.Flows, &f)
	return &f
}

// RemoveFlow is the modification free5GC sends when a PCC rule goes: Remove
// PDR and Remove FAR for its data path; its QER stays in gtp5g, with no PDR.
func (s *Session) RemoveFlow(name string) {
	for _, f := range s.Flows {
		if f.Name == name {
			f.removed = true
		}
	}
}

// UpdateQER is an Update QER changing a flow's MBR (and GBR, if it has one).
func (s *Session) UpdateQER(name string, gbr, mbr uint64) {
	for _, f := range s.Flows {
		if f.Name == name {
			f.GBR, f.MBR = gbr, mbr
		}
	}
}

// Find returns the flow named name.
func (s *Session) Find(name string) *Flow {
	for _, f := range s.Flows {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Dump is what gtp5g holds for the sessions. Patched adds what the
// gtp5g-patch series reports (source interface, the PDR's wire QFI, flow
// marks per QER and a mark per PDR); stock gtp5g reports none of it.
type Dump struct {
	QERs []gtp5g.QER
	PDRs []gtp5g.PDR
	FARs []gtp5g.FAR
}

// QERMark and PDRMark are the marks the fixture's patched module gives.
func QERMark(seid uint64, id uint32) uint32 { return uint32(seid)<<12 | id }

// PDRMark is a PDR's own mark (mark mode pdr).
func PDRMark(seid uint64, id uint16) uint32 { return uint32(seid)<<12 | 0x800 | uint32(id) }

// Build returns the dump of the sessions (deleted sessions left out).
func Build(patched bool, sessions ...*Session) Dump {
	var d Dump
	for _, s := range sessions {
		s.dump(&d, patched)
	}
	return d
}

func (s *Session) qers() []gtp5g.QER {
	qs := []gtp5g.QER{
		{SEID: s.SEID, ID: s.AMBRQER, QFI: s.AMBRQFI, MBR: gtp5g.Bitrate{Uplink: s.AMBR, Downlink: s.AMBR}},
		{SEID: s.SEID, ID: s.DefaultQER, QFI: 1},
	}
	for _, f := range s.Flows {
		q := gtp5g.QER{SEID: s.SEID, ID: f.QER, QFI: f.QFI, MBR: gtp5g.Bitrate{Uplink: f.MBR, Downlink: f.MBR}}
		if f.GBR != 0 {
			q.GBR = gtp5g.Bitrate{Uplink: f.GBR, Downlink: f.GBR}
		}
		qs = append(qs, q)
	}
	return qs
}

func (s *Session) dump(d *Dump, patched bool) {
	qers := s.qers()
	byID := map[uint32]*gtp5g.QER{}
	for i := range qers {
		byID[qers[i].ID] = &qers[i]
	}
	var pdrs []gtp5g.PDR
	var fars []gtp5g.FAR
	add := func(ids [2]uint16, qerIDs []uint32, dn string) {
		for dir, id := range ids {
			p, f := s.rule(id, dir == 1, qerIDs, dn, patched)
			pdrs, fars = append(pdrs, p), append(fars, f)
		}
	}
	add(s.DefaultPDRs, []uint32{s.DefaultQER, s.AMBRQER}, "")
	for _, f := range s.Flows {
		if f.removed {
			continue
		}
		ids := []uint32{f.QER}
		if f.GBR == 0 {
			ids = []uint32{s.AMBRQER, f.QER}
		}
		add(f.PDRs, ids, f.DN)
	}
	for i := range pdrs {
		p := &pdrs[i]
		for _, id := range p.QERIDs {
			q := byID[id]
			q.RelatedPDRs = append(q.RelatedPDRs, p.ID)
		}
		if !patched {
			continue
		}
		for _, id := range p.QERIDs {
			if q := byID[id]; q.QFI != 0 {
				p.QFI, p.FlowMark = q.QFI, QERMark(s.SEID, id)
				break
			}
		}
		p.PDRMark = PDRMark(s.SEID, p.ID)
	}
	if patched {
		for i := range qers {
			qers[i].FlowMark = QERMark(s.SEID, qers[i].ID)
		}
	}
	d.QERs = append(d.QERs, qers...)
	d.PDRs = append(d.PDRs, pdrs...)
	d.FARs = append(d.FARs, fars...)
}

// rule is one PDR and its FAR (same id, as the SMF's AddPDR allocates
// them together).
func (s *Session) rule(id uint16, down bool, qerIDs []uint32, dn string, patched bool) (gtp5g.PDR, gtp5g.FAR) {
	ue := netip.MustParseAddr(s.UE)
	p := gtp5g.PDR{SEID: s.SEID, ID: id, Precedence: 255, FARID: uint32(id), QERIDs: slices.Clone(qerIDs), URRIDs: slices.Clone(s.URRs)}
	far := gtp5g.FAR{SEID: s.SEID, ID: uint32(id), ApplyAction: gtp5g.ActionForw, RelatedPDRs: []uint16{id}, Forwarding: &gtp5g.ForwardingParameters{}}
	p.PDI.UEAddr = ue
	if dn != "" {
		p.Precedence = 128
		dir, src, dst := uint8(2), netip.MustParseAddr(dn), ue // permit out from the DN to the UE
		if !down {
			src, dst = ue, netip.MustParseAddr(dn)
		}
		p.PDI.SDF = &gtp5g.SDFFilter{Rule: &gtp5g.FlowDescription{Action: 1, Direction: dir, Protocol: 0xff, Src: src, Dst: dst}}
	}
	iface := gtp5g.InterfaceAccess
	if down {
		iface = gtp5g.InterfaceCore
		if s.N2 {
			far.Forwarding.OuterHeaderCreation = &gtp5g.OuterHeaderCreation{Description: 0x100, TEID: s.GNBTEID, Peer: netip.MustParseAddr("10.100.0.2"), Port: 2152}
		}
	} else {
		zero := uint8(0)
		p.OuterHeaderRemoval = &zero
		p.PDI.FTEID = &gtp5g.FTEID{TEID: s.ULTEID, Addr: netip.MustParseAddr("10.100.0.1")}
	}
	if patched {
		p.PDI.SourceInterface = &iface
	}
	return p, far
}

// Quarter is the acceptance scenario at a quarter of the seed's rates on a
// 7.5 Mbit/s link: UE 1 with the default path, GBR flows A (QFI 2,
// 3.75/4.5 Mbit/s) and B (QFI 3, 1.25/1.5), non-GBR flow C (QFI 4, MBR 2)
// and a 5 Mbit/s session AMBR; UE 2 with a GBR flow D on QFI 2 (0.5/0.75)
// and a 1 Mbit/s AMBR. Both after the N2 update.
func Quarter() (*UPF, *Session, *Session) {
	u := &UPF{}
	ue1 := u.Establish(1, "10.60.0.1", 200, 100, 5*Mbit,
		Flow{Name: "A", QFI: 2, GBR: 3_750_000, MBR: 4_500_000, DN: "192.168.100.2"},
		Flow{Name: "B", QFI: 3, GBR: 1_250_000, MBR: 1_500_000, DN: "192.168.100.3"},
		Flow{Name: "C", QFI: 4, MBR: 2 * Mbit, DN: "192.168.100.4"},
	)
	ue2 := u.Establish(2, "10.60.0.2", 201, 101, 1*Mbit,
		Flow{Name: "D", QFI: 2, GBR: 500_000, MBR: 750_000, DN: "192.168.100.2"},
	)
	ue1.N2, ue2.N2 = true, true
	return u, ue1, ue2
}
