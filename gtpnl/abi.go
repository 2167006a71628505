package gtpnl

// Wire constants of gtp5g v0.10.2's generic netlink family, from its
// include/genl*.h. They are unexported: callers use the decoded types.

const familyName = "gtp5g"

// Commands (enum gtp5g_cmd).
const (
	cmdAddPDR            = 1
	cmdAddFAR            = 2
	cmdAddQER            = 3
	cmdDelPDR            = 4
	cmdDelFAR            = 5
	cmdDelQER            = 6
	cmdGetPDR            = 7
	cmdGetFAR            = 8
	cmdGetQER            = 9
	cmdGetVersion        = 16
	cmdGetUsageStatistic = 20
)

// Device attributes shared by every command (enum gtp5g_device_attrs).
const (
	attrLink    = 1
	attrNetNSFD = 2
)

// GET_VERSION reply (enum gtp5g_version): the version string is attribute 0.
const attrVersion = 0

// QER attributes (enum gtp5g_qer_attrs).
const (
	attrQERID           = 3
	attrQERGate         = 4
	attrQERMBR          = 5
	attrQERGBR          = 6
	attrQERCorrID       = 7
	attrQERRQI          = 8
	attrQERQFI          = 9
	attrQERPPI          = 10
	attrQERRCSR         = 11
	attrQERRelatedToPDR = 12
	attrQERSEID         = 13
)

// Nested in QER MBR and GBR (enum gtp5g_mbr_attrs / gtp5g_qer_gbr_attrs).
const (
	attrBRULHigh32 = 1
	attrBRULLow8   = 2
	attrBRDLHigh32 = 3
	attrBRDLLow8   = 4
)

// PDR attributes (enum gtp5g_pdr_attrs).
const (
	attrPDRID              = 3
	attrPDRPrecedence      = 4
	attrPDRPDI             = 5
	attrOuterHeaderRemoval = 6
	attrPDRFARID           = 7
	attrPDRRoleAddrIPv4    = 8
	attrPDRUnixSocketPath  = 9
	attrPDRQERID           = 10
	attrPDRSEID            = 11
	attrPDRURRID           = 12
)

// PDI attributes (enum gtp5g_pdi_attrs).
const (
	attrPDIUEAddrIPv4  = 1
	attrPDIFTEID       = 2
	attrPDISDFFilter   = 3
	attrPDISrcIntf     = 4
	attrPDIEthFilter   = 5
	attrPDIFramedRoute = 6
)

// F-TEID attributes (enum gtp5g_f_teid_attrs).
const (
	attrFTEIDTEID     = 1
	attrFTEIDAddrIPv4 = 2
)

// SDF filter attributes (enum gtp5g_sdf_filter_attrs).
const (
	attrSDFFlowDescription = 1
	attrSDFTOSTrafficClass = 2
	attrSDFSPI             = 3
	attrSDFFlowLabel       = 4
	attrSDFFilterID        = 5
)

// Flow description attributes (enum gtp5g_flow_description_attrs).
const (
	attrFDAction    = 1
	attrFDDirection = 2
	attrFDProtocol  = 3
	attrFDSrcIPv4   = 4
	attrFDSrcMask   = 5
	attrFDDestIPv4  = 6
	attrFDDestMask  = 7
	attrFDSrcPort   = 8
	attrFDDestPort  = 9
)

// FAR attributes (enum gtp5g_far_attrs).
const (
	attrFARID              = 3
	attrFARApplyAction     = 4
	attrFARForwardingParam = 5
	attrFARRelatedToPDR    = 6
	attrFARSEID            = 7
	attrFARBARID           = 8
)

// Forwarding parameter attributes (enum gtp5g_forwarding_parameter_attrs).
const (
	attrFwdOuterHeaderCreation = 1
	attrFwdForwardingPolicy    = 2
	attrFwdPFCPSMReqFlags      = 3
	attrFwdTOSTC               = 4
)

// Outer header creation attributes (enum gtp5g_outer_header_creation_attrs).
const (
	attrOHCDescription = 1
	attrOHCTEID        = 2
	attrOHCPeerIPv4    = 3
	attrOHCPort        = 4
)
