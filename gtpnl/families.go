package gtpnl

import (
	"fmt"
	"strings"
)

// Family is one generic netlink family of the loaded gtp5g module: "gtp5g"
// itself, and "gtp5g_qos" when the gtpqos gtp5g-patch series is applied.
type Family struct {
	// Name is the family's name.
	Name string
	// ID is the family id the kernel assigned.
	ID uint16
	// Version is the family's version (gtp5g: 0; gtp5g_qos: 1).
	Version uint8
	// Groups are the names of its multicast groups.
	Groups []string
	// Features is what the family offers (gtp5g_qos's GET_FEATURES; none
	// for gtp5g).
	Features Features
}

// String formats the family for people: "gtp5g v0 (id 30, groups gtp5g)",
// "gtp5g_qos v1 (id 31, groups events): flow-mark,qos-events,...".
func (f Family) String() string {
	s := fmt.Sprintf("%s v%d (id %d", f.Name, f.Version, f.ID)
	if len(f.Groups) > 0 {
		s += ", groups " + strings.Join(f.Groups, ",")
	}
	s += ")"
	if f.Name == qosFamilyName {
		s += ": " + f.Features.String()
	}
	return s
}
