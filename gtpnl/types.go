package gtpnl

import "github.com/free5gc/gtpqos/gtpnl/gtp5g"

// The rule types gtpnl decodes live in package gtp5g, so that code which
// only reads rules (qosview) needs no netlink; they are the same types
// under these names.
type (
	QER                  = gtp5g.QER
	Bitrate              = gtp5g.Bitrate
	Gate                 = gtp5g.Gate
	PDR                  = gtp5g.PDR
	Interface            = gtp5g.Interface
	PDI                  = gtp5g.PDI
	FTEID                = gtp5g.FTEID
	SDFFilter            = gtp5g.SDFFilter
	FlowDescription      = gtp5g.FlowDescription
	PortRange            = gtp5g.PortRange
	FAR                  = gtp5g.FAR
	ApplyAction          = gtp5g.ApplyAction
	ForwardingParameters = gtp5g.ForwardingParameters
	OuterHeaderCreation  = gtp5g.OuterHeaderCreation
	MarkMode             = gtp5g.MarkMode
	MarkLayout           = gtp5g.MarkLayout
)

// Source interfaces, apply actions and mark modes (package gtp5g).
const (
	InterfaceAccess     = gtp5g.InterfaceAccess
	InterfaceCore       = gtp5g.InterfaceCore
	InterfaceSGiLAN     = gtp5g.InterfaceSGiLAN
	InterfaceCPFunction = gtp5g.InterfaceCPFunction
	ActionDrop          = gtp5g.ActionDrop
	ActionForw          = gtp5g.ActionForw
	ActionBuff          = gtp5g.ActionBuff
	ActionNocp          = gtp5g.ActionNocp
	ActionDupl          = gtp5g.ActionDupl
	MarkOff             = gtp5g.MarkOff
	MarkQFI             = gtp5g.MarkQFI
	MarkFlow            = gtp5g.MarkFlow
	MarkPDR             = gtp5g.MarkPDR
)

// ParseMarkMode parses "off", "qfi", "flow" or "pdr" (package gtp5g).
func ParseMarkMode(s string) (MarkMode, error) { return gtp5g.ParseMarkMode(s) }
