package shaper

import "fmt"

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
)

// String returns "link", "default", "session" or "flow".
func (r Role) String() string {
	switch r {
	case RoleLink:
		return "link"
	case RoleDefault:
		return "default"
	case RoleSession:
		return "session"
	case RoleFlow:
		return "flow"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}
