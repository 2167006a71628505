package gtpnl

import (
	"net/netip"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nlenc"
)

// This file builds messages the way gtp5g v0.10.2's QER, PDR and FAR fill
// functions do (same attribute order, types and widths), and the records
// and events of the gtpqos patch series' gtp5g_qos family
// (gtp5g-patch/ABI.md).

// kqer is a QER as gtp5g's struct qer stores it.
type kqer struct {
	id                  uint32
	seid                uint64
	gate                uint8
	mbrUL, mbrDL        uint64 // kbit/s
	gbrUL, gbrDL        uint64 // kbit/s
	corrID              uint32
	rqi, qfi, ppi, rcsr uint8
	pdrIDs              []uint16
}

func putRate(ae *netlink.AttributeEncoder, ul, dl uint64) {
	ae.Uint32(attrBRULHigh32, uint32(ul>>8))
	ae.Uint8(attrBRULLow8, uint8(ul))
	ae.Uint32(attrBRDLHigh32, uint32(dl>>8))
	ae.Uint8(attrBRDLLow8, uint8(dl))
}

func u16s(ids []uint16) []byte {
	b := make([]byte, 0, 2*len(ids))
	for _, id := range ids {
		b = append(b, nlenc.Uint16Bytes(id)...) // native endian, like the kernel
	}
	return b
}

func (q kqer) attrs(tb testing.TB) []byte {
	tb.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrQERID, q.id)
	ae.Uint8(attrQERGate, q.gate)
	if q.seid != 0 {
		ae.Uint64(attrQERSEID, q.seid)
	}
	ae.Nested(attrQERMBR, func(nae *netlink.AttributeEncoder) error { putRate(nae, q.mbrUL, q.mbrDL); return nil })
	ae.Nested(attrQERGBR, func(nae *netlink.AttributeEncoder) error { putRate(nae, q.gbrUL, q.gbrDL); return nil })
	ae.Uint32(attrQERCorrID, q.corrID)
	ae.Uint8(attrQERRQI, q.rqi)
	ae.Uint8(attrQERQFI, q.qfi)
	ae.Uint8(attrQERPPI, q.ppi)
	ae.Uint8(attrQERRCSR, q.rcsr)
	if len(q.pdrIDs) > 0 {
		ae.Bytes(attrQERRelatedToPDR, u16s(q.pdrIDs))
	}
	return mustEncode(tb, ae)
}

// kpdr is a PDR as gtp5g stores it.
type kpdr struct {
	id         uint16
	precedence uint32
	seid       uint64
	ohr        *uint8
	farID      uint32
	qerIDs     []uint32
	urrIDs     []uint32
	ueAddr     string
	teid       uint32
	gtpuAddr   string
	srcIntf    *uint8 // v0.10.2 does not put it back; a later gtp5g may
	sdf        *ksdf
}

type ksdf struct {
	action, dir, proto uint8
	src, dst           string
	smask              string // "" = 255.255.255.255 (left out)
	dports             []uint32
}

func addr4(s string) []byte {
	a := netip.MustParseAddr(s).As4()
	return a[:]
}

func (p kpdr) attrs(tb testing.TB) []byte {
	tb.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Uint16(attrPDRID, p.id)
	ae.Uint32(attrPDRPrecedence, p.precedence)
	if p.seid != 0 {
		ae.Uint64(attrPDRSEID, p.seid)
	}
	if p.ohr != nil {
		ae.Uint8(attrOuterHeaderRemoval, *p.ohr)
	}
	if p.farID != 0 {
		ae.Uint32(attrPDRFARID, p.farID)
	}
	for _, id := range p.qerIDs {
		ae.Uint32(attrPDRQERID, id)
	}
	for _, id := range p.urrIDs {
		ae.Uint32(attrPDRURRID, id)
	}
	ae.Nested(attrPDRPDI, func(pae *netlink.AttributeEncoder) error {
		if p.srcIntf != nil {
			pae.Uint8(attrPDISrcIntf, *p.srcIntf)
		}
		if p.ueAddr != "" {
			pae.Bytes(attrPDIUEAddrIPv4, addr4(p.ueAddr))
		}
		if p.gtpuAddr != "" {
			pae.Nested(attrPDIFTEID, func(fae *netlink.AttributeEncoder) error {
				fae.Uint32(attrFTEIDTEID, p.teid)
				fae.Bytes(attrFTEIDAddrIPv4, addr4(p.gtpuAddr))
				return nil
			})
		}
		if p.sdf != nil {
			pae.Nested(attrPDISDFFilter, func(sae *netlink.AttributeEncoder) error {
				sae.Nested(attrSDFFlowDescription, func(fae *netlink.AttributeEncoder) error {
					fae.Uint8(attrFDAction, p.sdf.action)
					fae.Uint8(attrFDDirection, p.sdf.dir)
					fae.Uint8(attrFDProtocol, p.sdf.proto)
					fae.Bytes(attrFDSrcIPv4, addr4(p.sdf.src))
					fae.Bytes(attrFDDestIPv4, addr4(p.sdf.dst))
					if p.sdf.smask != "" {
						fae.Bytes(attrFDSrcMask, addr4(p.sdf.smask))
					}
					if len(p.sdf.dports) > 0 {
						var b []byte
						for _, v := range p.sdf.dports {
							b = append(b, nlenc.Uint32Bytes(v)...)
						}
						fae.Bytes(attrFDDestPort, b)
					}
					return nil
				})
				return nil
			})
		}
		return nil
	})
	return mustEncode(tb, ae)
}

// kfar is a FAR as gtp5g stores it.
type kfar struct {
	id        uint32
	action    uint16
	u16Action bool
	seid      uint64
	ohc       bool
	desc      uint16
	teid      uint32
	peer      string
	port      uint16
	policy    string
	tosTC     uint8
	fwd       bool
	pdrIDs    []uint16
}

func (f kfar) attrs(tb testing.TB) []byte {
	tb.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrFARID, f.id)
	if f.u16Action {
		ae.Uint16(attrFARApplyAction, f.action)
	} else {
		ae.Uint8(attrFARApplyAction, uint8(f.action))
	}
	if f.seid != 0 {
		ae.Uint64(attrFARSEID, f.seid)
	}
	if f.fwd {
		ae.Nested(attrFARForwardingParam, func(nae *netlink.AttributeEncoder) error {
			if f.ohc {
				nae.Nested(attrFwdOuterHeaderCreation, func(oae *netlink.AttributeEncoder) error {
					oae.Uint16(attrOHCDescription, f.desc)
					oae.Uint32(attrOHCTEID, f.teid)
					oae.Bytes(attrOHCPeerIPv4, addr4(f.peer))
					oae.Uint16(attrOHCPort, f.port)
					return nil
				})
			}
			if f.policy != "" {
				nae.Bytes(attrFwdForwardingPolicy, []byte(f.policy))
			}
			if f.ohc {
				nae.Uint8(attrFwdTOSTC, f.tosTC)
			}
			return nil
		})
	}
	if len(f.pdrIDs) > 0 {
		ae.Bytes(attrFARRelatedToPDR, u16s(f.pdrIDs))
	}
	return mustEncode(tb, ae)
}

func mustEncode(tb testing.TB, ae *netlink.AttributeEncoder) []byte {
	tb.Helper()
	b, err := ae.Encode()
	if err != nil {
		tb.Fatalf("encode attributes: %v", err)
	}
	return b
}

// reply wraps attribute bytes as gtp5g's reply to cmd.
func reply(cmd uint8, data []byte) genetlink.Message {
	return genetlink.Message{Header: genetlink.Header{Command: cmd}, Data: data}
}

func u8p(v uint8) *uint8 { return &v }

// eventHead encodes the attributes every gtp5g_qos event starts with.
func eventHead(ae *netlink.AttributeEncoder, op uint8, seq uint32, seid uint64) {
	ae.Uint8(qosAttrEventOp, op)
	ae.Uint32(qosAttrEventSeq, seq)
	ae.Uint32(qosAttrLink, 7)
	ae.String(qosAttrIfname, "upfgtp")
	ae.Uint64(qosAttrSEID, seid)
}

func eventMessage(tb testing.TB, ae *netlink.AttributeEncoder) genetlink.Message {
	tb.Helper()
	return reply(qosCmdEvent, mustEncode(tb, ae))
}

// qerEvent builds the gtp5g_qos event of op on QER q with its flow mark.
func qerEvent(tb testing.TB, op uint8, seq uint32, q kqer, flowMark uint32) genetlink.Message {
	tb.Helper()
	ae := netlink.NewAttributeEncoder()
	eventHead(ae, op, seq, q.seid)
	ae.Uint32(qosAttrQERID, q.id)
	ae.Uint32(qosAttrFlowMark, flowMark)
	ae.Bytes(qosAttrQER|netlink.Nested, q.attrs(tb))
	return eventMessage(tb, ae)
}

// pdrEvent builds the gtp5g_qos event of op on PDR p with its QFI and
// flow mark.
func pdrEvent(tb testing.TB, op uint8, seq uint32, p kpdr, qfi uint8, flowMark uint32) genetlink.Message {
	tb.Helper()
	ae := netlink.NewAttributeEncoder()
	eventHead(ae, op, seq, p.seid)
	ae.Uint16(qosAttrPDRID, p.id)
	ae.Uint8(qosAttrQFI, qfi)
	ae.Uint32(qosAttrFlowMark, flowMark)
	ae.Bytes(qosAttrPDR|netlink.Nested, p.attrs(tb))
	return eventMessage(tb, ae)
}

// farEvent builds the gtp5g_qos event of op on FAR f.
func farEvent(tb testing.TB, op uint8, seq uint32, f kfar) genetlink.Message {
	tb.Helper()
	ae := netlink.NewAttributeEncoder()
	eventHead(ae, op, seq, f.seid)
	ae.Uint32(qosAttrFARID, f.id)
	ae.Bytes(qosAttrFAR|netlink.Nested, f.attrs(tb))
	return eventMessage(tb, ae)
}

// droppedEvent builds the delete event of a rule gtp5g dropped after a
// failed update: ids only (idAttr qosAttrPDRID, _FARID or _QERID).
func droppedEvent(tb testing.TB, seq uint32, idAttr uint16, seid uint64, id uint32) genetlink.Message {
	tb.Helper()
	ae := netlink.NewAttributeEncoder()
	eventHead(ae, 3, seq, seid)
	if idAttr == qosAttrPDRID {
		ae.Uint16(idAttr, uint16(id))
	} else {
		ae.Uint32(idAttr, id)
	}
	return eventMessage(tb, ae)
}

// qerRecord and pdrRecord build gtp5g_qos GET_QER / GET_PDR dump records.
func qerRecord(tb testing.TB, link uint32, seid uint64, id, flowMark uint32) []byte {
	tb.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(qosAttrLink, link)
	ae.Uint64(qosAttrSEID, seid)
	ae.Uint32(qosAttrQERID, id)
	ae.Uint32(qosAttrFlowMark, flowMark)
	return mustEncode(tb, ae)
}

func pdrRecord(tb testing.TB, link uint32, seid uint64, id uint16, qfi uint8, flowMark uint32) []byte {
	tb.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(qosAttrLink, link)
	ae.Uint64(qosAttrSEID, seid)
	ae.Uint16(qosAttrPDRID, id)
	ae.Uint8(qosAttrQFI, qfi)
	ae.Uint32(qosAttrFlowMark, flowMark)
	return mustEncode(tb, ae)
}
