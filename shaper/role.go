package shaper

import "github.com/free5gc/gtpqos/internal/enum"

// Role is what a class is for.
type Role uint8

const (
	// RoleLink is the class at the link rate under the root qdisc.
	RoleLink Role = iota + 1
	// RoleDefault is the class HTB's default points at.
	RoleDefault
	// RoleSession is a session's AMBR class, parent of its non-GBR flows.
	RoleSession
	// RoleFlow is one QoS flow's leaf class.
	RoleFlow
	// RoleSpare is an idle leaf class kept ready under the link class, so
	// that a new flow changes a class instead of creating one (a change
	// costs the kernel far less than a create in a big tree). Nothing is
	// bound to it.
	RoleSpare
	// RoleShared is a class many flows share, told apart by something
	// other than their class (the edt backend's guaranteed and non-GBR
	// classes, whose flows a BPF program paces).
	RoleShared
)

var roles = enum.Table[Role]{What: "role", Names: []enum.Name[Role]{
	{Value: RoleLink, Name: "link"},
	{Value: RoleDefault, Name: "default"},
	{Value: RoleSession, Name: "session"},
	{Value: RoleFlow, Name: "flow"},
	{Value: RoleSpare, Name: "spare"},
	{Value: RoleShared, Name: "shared"},
}}

// String returns "link", "default", "session", "flow", "spare" or
// "shared".
func (r Role) String() string { return roles.String(r) }
