package qosview

import (
	"slices"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
)

// Key names a rule: gtp5g keys QERs, PDRs and FARs by (SEID, id).
type Key struct {
	SEID uint64
	ID   uint32
}

// Role is what a QER is for.
type Role uint8

const (
	// RoleNoRate: the QER carries no GBR and no MBR (e.g. free5GC's default
	// QER: QFI and gate only). It yields no class.
	RoleNoRate Role = iota + 1
	// RoleFlow: a rate-bearing QER of one QoS flow (GBR/MBR).
	RoleFlow
	// RoleSessionAMBR: the session-level QER carrying the session AMBR as
	// its MBR. It yields no class of its own; it is the SessionAMBR of the
	// non-GBR flows whose PDRs reference it.
	RoleSessionAMBR
)

// String names the role.
func (r Role) String() string {
	switch r {
	case RoleNoRate:
		return "no-rate"
	case RoleFlow:
		return "flow"
	case RoleSessionAMBR:
		return "session-ambr"
	default:
		return "unknown"
	}
}

// Roles classifies every QER. The session-AMBR rule, written for what
// free5GC's SMF installs (internal/context/datapath.go: one AMBR QER per
// session and UPF, with MBR = session AMBR, no GBR and QFI = the default
// QFI, added to the PDRs of the default path and of every non-GBR flow,
// next to that path's own QER), is: a QER is the session AMBR when
//
//  1. it has an MBR and no GBR, and
//  2. every PDR that references it also references another QER, and
//  3. it shares PDRs with at least two different QERs (it spans several
//     QoS flows), or every QER it shares a PDR with carries no rate (the
//     default path alone: [default QER, AMBR QER]).
//
// A non-GBR flow's own QER fails 3 (its only partner is the AMBR QER,
// which has a rate), so a session with one non-GBR flow and no default
// path is ambiguous and Build reports it instead of guessing.
func Roles(qers []gtp5g.QER, pdrs []gtp5g.PDR) map[Key]Role {
	byKey := make(map[Key]*gtp5g.QER, len(qers))
	for i := range qers {
		k := Key{qers[i].SEID, qers[i].ID}
		if _, dup := byKey[k]; !dup {
			byKey[k] = &qers[i]
		}
	}
	partners := make(map[Key]map[Key]bool)
	alone := make(map[Key]bool) // referenced by a PDR with no other QER
	for _, p := range pdrs {
		ks := make([]Key, 0, len(p.QERIDs))
		for _, id := range p.QERIDs {
			k := Key{p.SEID, id}
			if byKey[k] != nil && !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
		if len(ks) == 1 {
			alone[ks[0]] = true
		}
		for _, a := range ks {
			for _, b := range ks {
				if a == b {
					continue
				}
				if partners[a] == nil {
					partners[a] = map[Key]bool{}
				}
				partners[a][b] = true
			}
		}
	}
	roles := make(map[Key]Role, len(byKey))
	for k, q := range byKey {
		switch {
		case q.GBR.IsZero() && q.MBR.IsZero():
			roles[k] = RoleNoRate
		case isSessionAMBR(q, partners[k], alone[k], byKey):
			roles[k] = RoleSessionAMBR
		default:
			roles[k] = RoleFlow
		}
	}
	return roles
}

func isSessionAMBR(q *gtp5g.QER, partners map[Key]bool, alone bool, byKey map[Key]*gtp5g.QER) bool {
	if !q.GBR.IsZero() || q.MBR.IsZero() || alone || len(partners) == 0 {
		return false
	}
	if len(partners) >= 2 {
		return true
	}
	for k := range partners {
		if p := byKey[k]; !p.GBR.IsZero() || !p.MBR.IsZero() {
			return false
		}
	}
	return true
}
