package rulemodel

import "github.com/free5gc/gtpqos/gtpnl/gtp5g"

// The rule model keeps of each rule what the QoS view (qosview.Build)
// reads, in about a third of the full rule's room: a session's flows are viewed
// again from these on every event, and at 65k sessions the full rules
// would be the daemon's largest table. The session's SEID is the model's
// key, not repeated per rule. TestViewOfModelRulesIsTheViewOfFullRules
// views random full rules both ways, so a field the view starts reading
// fails it until it is kept here.

// qer is a QER as the view reads it.
type qer struct {
	gbr, mbr gtp5g.Bitrate
	id       uint32
	mark     uint32
	qfi      uint8
}

func qerForView(q *gtp5g.QER) qer {
	return qer{gbr: q.GBR, mbr: q.MBR, id: q.ID, mark: q.FlowMark, qfi: q.QFI}
}

func (q *qer) rule(seid uint64) gtp5g.QER {
	return gtp5g.QER{SEID: seid, ID: q.id, GBR: q.gbr, MBR: q.mbr, QFI: q.qfi, FlowMark: q.mark}
}

// pdr is a PDR as the view reads it: its source interface and whether
// it has a local F-TEID say its direction, the F-TEID's TEID is an uplink
// flow's tunnel.
type pdr struct {
	qers    []uint32
	farID   uint32
	mark    uint32
	pdrMark uint32 // the PDR's own mark (mark mode pdr)
	teid    uint32
	id      uint16
	qfi     uint8
	iface   gtp5g.Interface
	hasIf   bool
	hasTEID bool
}

func pdrForView(p *gtp5g.PDR) pdr {
	v := pdr{qers: p.QERIDs, farID: p.FARID, mark: p.FlowMark, pdrMark: p.PDRMark, id: p.ID, qfi: p.QFI}
	if si := p.PDI.SourceInterface; si != nil {
		v.iface, v.hasIf = *si, true
	}
	if ft := p.PDI.FTEID; ft != nil {
		v.teid, v.hasTEID = ft.TEID, true
	}
	return v
}

func (p *pdr) rule(seid uint64) gtp5g.PDR {
	r := gtp5g.PDR{SEID: seid, ID: p.id, FARID: p.farID, QERIDs: p.qers, QFI: p.qfi, FlowMark: p.mark, PDRMark: p.pdrMark}
	if p.hasIf {
		si := p.iface
		r.PDI.SourceInterface = &si
	}
	if p.hasTEID {
		r.PDI.FTEID = &gtp5g.FTEID{TEID: p.teid}
	}
	return r
}

// far is a FAR as the view reads it: the TEID of the GTP-U header it
// pushes, which is a downlink flow's tunnel.
type far struct {
	id     uint32
	teid   uint32
	action gtp5g.ApplyAction
	hasFwd bool
	hasOHC bool
}

func farForView(f *gtp5g.FAR) far {
	v := far{id: f.ID, action: f.ApplyAction}
	if fp := f.Forwarding; fp != nil {
		v.hasFwd = true
		if ohc := fp.OuterHeaderCreation; ohc != nil {
			v.teid, v.hasOHC = ohc.TEID, true
		}
	}
	return v
}

func (f *far) rule(seid uint64) gtp5g.FAR {
	r := gtp5g.FAR{SEID: seid, ID: f.id, ApplyAction: f.action}
	if f.hasFwd {
		r.Forwarding = &gtp5g.ForwardingParameters{}
		if f.hasOHC {
			r.Forwarding.OuterHeaderCreation = &gtp5g.OuterHeaderCreation{TEID: f.teid}
		}
	}
	return r
}
