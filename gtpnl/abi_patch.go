package gtpnl

// Wire constants of "gtp5g_qos", the generic netlink family the gtpqos
// gtp5g-patch series adds, exactly as gtp5g-patch/ABI.md defines them. The
// family has numbers of its own: nothing the series adds lives in the
// "gtp5g" family, which stays as upstream defines it.

// qosFamilyName is the series' family; qosGroup its event group.
const (
	qosFamilyName = "gtp5g_qos"
	qosGroup      = "events"
)

// Commands (enum gtp5g_qos_cmd).
const (
	qosCmdGetFeatures = 1
	qosCmdGetMark     = 2
	qosCmdSetMark     = 3
	qosCmdGetPolicer  = 4
	qosCmdSetPolicer  = 5
	qosCmdGetPDR      = 6 // dump: PDR QFI and flow mark records
	qosCmdGetQER      = 7 // dump: QER flow mark records
	qosCmdEvent       = 8 // notification on qosGroup
)

// Attributes (enum gtp5g_qos_attrs).
const (
	qosAttrPad       = 1
	qosAttrFeatures  = 2  // u32
	qosAttrMarkMode  = 3  // u8 0 off, 1 qfi, 2 flow, 3 pdr
	qosAttrMarkMask  = 4  // u32
	qosAttrMarkShift = 5  // u8
	qosAttrPolicer   = 6  // u8 0/1
	qosAttrLink      = 7  // u32 ifindex
	qosAttrSEID      = 8  // u64
	qosAttrPDRID     = 9  // u16
	qosAttrQERID     = 10 // u32
	qosAttrQFI       = 11 // u8
	qosAttrFlowMark  = 12 // u32
	qosAttrEventOp   = 13 // u8 1 add, 2 update, 3 delete
	qosAttrEventSeq  = 14 // u32
	qosAttrIfname    = 15 // string
	qosAttrFARID     = 16 // u32
	qosAttrPDR       = 17 // nested: gtp5g's GET_PDR attributes
	qosAttrFAR       = 18 // nested: gtp5g's GET_FAR attributes
	qosAttrQER       = 19 // nested: gtp5g's GET_QER attributes
	qosAttrPDRMark   = 20 // u32: the PDR's own mark (mark mode pdr)
)
