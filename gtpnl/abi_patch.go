package gtpnl

// Wire constants added by the gtpqos gtp5g-patch series, exactly as
// gtp5g-patch/ABI.md defines them. Every number comes after v0.10.2's last
// command or attribute, so a stock module is probed safely.

// Commands.
const (
	cmdGetQoSMark = 21
	cmdSetQoSMark = 22
	cmdQoSEvent   = 23
	cmdGetPolicer = 24
	cmdSetPolicer = 25
)

// GET_VERSION: request flag / reply u32 feature bitmap.
const attrVersionFeatures = 1

// Attribute namespace gtp5g_qos_attrs (commands 21-25 and events).
const (
	attrMarkMode    = 3  // u8 0 off, 1 qfi, 2 flow
	attrMarkMask    = 4  // u32
	attrMarkShift   = 5  // u8
	attrEventOp     = 6  // u8 1 add, 2 update, 3 delete
	attrEventSeq    = 7  // u32
	attrEventIfname = 8  // string
	attrEventPDR    = 9  // nested PDR attributes
	attrEventFAR    = 10 // nested FAR attributes
	attrEventQER    = 11 // nested QER attributes
	attrPolicer     = 12 // u8 0/1
)

// New attributes in existing namespaces.
const (
	attrQERFlowMark = 14 // u32, QER replies and event nests
	attrPDRQFI      = 13 // u8, PDR replies and event nests
	attrPDRFlowMark = 14 // u32, PDR replies and event nests
)

// qosGroup is the multicast group carrying QoS events.
const qosGroup = "gtp5g_qos"
